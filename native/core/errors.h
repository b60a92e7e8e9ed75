// Core errors: a stable code (ERR_SIGHTLINE_...) and a message naming the value and what is valid.
// The addon converts these to JavaScript errors carrying `code`.
#pragma once
#include <stdexcept>
#include <string>

namespace sightline {

class CoreError : public std::runtime_error {
 public:
  CoreError(std::string code, const std::string& message) : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

}  // namespace sightline
