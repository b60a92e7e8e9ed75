#include "data_path.h"

#include <cerrno>
#include <chrono>

#include "wire.h"

namespace sightline::net {

namespace {
double microsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}
// The smallest chunk of viewers a send thread claims: a batch's worth.
constexpr uint32_t kSendGrain = Sender::kBatch;
}  // namespace

DataPath::DataPath(const DataPathOptions& o, std::function<void()> notify)
    : socket_(o.adoptFd >= 0 ? UdpSocket::adopt(o.adoptFd) : UdpSocket::open(o.bind, o.v6Only)),
      sessions_(o.maxSessions, Sender::kMaxWorkers),
      sender_(socket_.fd(), sessions_) {
  if (o.sendBufferBytes > 0) socket_.setSendBuffer(o.sendBufferBytes);
  if (o.recvBufferBytes > 0) socket_.setRecvBuffer(o.recvBufferBytes);
  grantedSend_ = socket_.sendBuffer();
  grantedRecv_ = socket_.recvBuffer();
  if (o.dontFragment) socket_.setDontFragment();
  receiver_ = std::make_unique<Receiver>(socket_.fd(), sessions_, o.forwardAcks, o.maxBatchBytes, std::move(notify));
}

void DataPath::close() {
  {
    std::unique_lock<std::mutex> lock(stateM_);
    if (closed_.exchange(true, std::memory_order_acq_rel) && !socket_.isOpen()) return;
    idle_.wait(lock, [this] { return inTick_ == 0; });
  }
  receiver_->stop();
  sessions_.clear();
  socket_.close();
}

bool DataPath::enter() {
  std::lock_guard<std::mutex> lock(stateM_);
  if (closed_.load(std::memory_order_relaxed)) return false;
  ++inTick_;
  return true;
}

void DataPath::leave() {
  std::lock_guard<std::mutex> lock(stateM_);
  if (--inTick_ == 0) idle_.notify_all();
}

void DataPath::addTotals(const SendCounters& c) {
  totals_.sent.fetch_add(c.sent, std::memory_order_relaxed);
  totals_.bytes.fetch_add(c.bytes, std::memory_order_relaxed);
  totals_.dropped.fetch_add(c.dropped, std::memory_order_relaxed);
  totals_.failed.fetch_add(c.failed, std::memory_order_relaxed);
  totals_.unrouted.fetch_add(c.unrouted, std::memory_order_relaxed);
}

void DataPath::reserveThreads(unsigned threads) {
  sender_.reserveWorkers(threads);
  if (perWorker_.size() < threads) perWorker_.resize(threads);
}

void DataPath::applyAcks(World& world, ThreadPool& pool) {
  last_ = TickTransport{};
  if (!enter()) return;
  const auto t0 = std::chrono::steady_clock::now();
  receiver_->takeAcks(acks_);
  const size_t n = acks_.size();
  ackInputs_.resize(n);
  ackOutcomes_.resize(n);
  for (size_t i = 0; i < n; ++i) ackInputs_[i] = {acks_[i].viewer, acks_[i].ack, acks_[i].ackBits};
  world.acknowledgeAll(ackInputs_.data(), n, ackOutcomes_.data(), pool);
  for (size_t i = 0; i < n; ++i) {
    switch (ackOutcomes_[i]) {
      case World::AckOutcome::Applied: ++last_.acksApplied; break;
      case World::AckOutcome::Unused: ++last_.acksUnused; break;
      case World::AckOutcome::Invalid: ++last_.acksInvalid; break;
    }
  }
  totals_.acksApplied.fetch_add(last_.acksApplied, std::memory_order_relaxed);
  totals_.acksUnused.fetch_add(last_.acksUnused, std::memory_order_relaxed);
  totals_.acksInvalid.fetch_add(last_.acksInvalid, std::memory_order_relaxed);
  last_.ackMicros = microsSince(t0);
  leave();
}

void DataPath::sendTick(World& world, ThreadPool& pool) {
  last_.tick = world.tick();
  if (!enter()) return;
  const auto t0 = std::chrono::steady_clock::now();
  reserveThreads(pool.size());  // done when attached to the world: nothing to allocate
  for (auto& w : perWorker_) w.c = SendCounters{};
  const uint8_t* base = world.output();
  const uint32_t* index = world.packetIndex();
  const uint32_t n = uint32_t(world.viewerCount());
  pool.parallelFor(n, kSendGrain, [&](uint32_t b, uint32_t e, unsigned w) {
    sender_.sendRange(base, index, b, e, w, perWorker_[w].c);
  });
  SendCounters sum;
  for (unsigned w = 0; w < pool.size(); ++w) sum.add(perWorker_[w].c);
  last_.send = sum;
  addTotals(sum);
  last_.sendMicros = microsSince(t0);
  leave();
}

SendCounters DataPath::sendPackets(const uint8_t* base, const uint32_t* index, uint32_t count) {
  SendCounters c;
  if (!enter()) {
    for (uint32_t i = 0; i < count; ++i) c.unrouted += index[3 * size_t{i} + 2] != 0;
    totals_.unrouted.fetch_add(c.unrouted, std::memory_order_relaxed);
    return c;
  }
  sender_.sendRange(base, index, 0, count, Sender::kJsWorker, c);
  addTotals(c);
  leave();
  return c;
}

int DataPath::sendTo(const Endpoint& to, const uint8_t* data, size_t length) {
  if (!enter()) return EBADF;
  const int r = sender_.sendTo(to, data, length);
  leave();
  return r;
}

int DataPath::sendOne(uint32_t viewer, const uint8_t* data, size_t length) {
  const uint32_t index[3] = {viewer, 0, uint32_t(length)};
  const SendCounters c = sendPackets(data, index, 1);
  if (c.sent) return 0;
  if (c.unrouted) return ENOENT;
  return c.dropped ? EAGAIN : sender_.lastError();
}

}  // namespace sightline::net
