{
  "variables": {
    "sightline_pgo%": "",
    "sightline_pgo_dir%": ""
  },
  "targets": [
    {
      "target_name": "sightline",
      "sources": [
        "native/core/arena.cpp",
        "native/core/attributes.cpp",
        "native/core/config.cpp",
        "native/core/entities.cpp",
        "native/core/snapshot.cpp",
        "native/core/gather.cpp",
        "native/core/simd.cpp",
        "native/core/select.cpp",
        "native/core/ghost.cpp",
        "native/core/pass.cpp",
        "native/core/thread_pool.cpp",
        "native/core/world.cpp",
        "native/core/ack_batch.cpp",
        "native/addon/module.cpp",
        "native/addon/addon_data.cpp",
        "native/addon/args.cpp",
        "native/addon/coded_error.cpp",
        "native/addon/buffers.cpp",
        "native/addon/config_object.cpp",
        "native/addon/cells.cpp",
        "native/addon/pass_worker.cpp",
        "native/addon/native_world.cpp",
        "native/addon/native_world_entities.cpp",
        "native/addon/native_world_state.cpp",
        "native/addon/native_world_viewers.cpp",
        "native/addon/native_world_acks.cpp",
        "native/addon/native_world_events.cpp",
        "native/addon/native_world_tick.cpp",
        "native/addon/native_world_introspection.cpp",
        "native/addon/native_world_transport.cpp",
        "native/addon/native_udp.cpp",
        "native/addon/native_swarm.cpp",
        "native/addon/batch_notifier.cpp"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "native/core"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_CPP_EXCEPTIONS", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions", "-O2", "-O3"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti", "-std=gnu++17", "-std=gnu++1y", "-O2"],
      "cflags_cc": ["-std=c++20", "-O3", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "xcode_settings": {
        "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
        "CLANG_CXX_LANGUAGE_STANDARD": "c++20",
        "OTHER_CPLUSPLUSFLAGS": ["-O3"]
      },
      "msvs_settings": { "VCCLCompilerTool": { "ExceptionHandling": 1, "AdditionalOptions": ["/std:c++20"] } },
      "conditions": [
        ["OS=='linux'", {
          "sources": [
            "native/net/endpoint.cpp",
            "native/net/udp_socket.cpp",
            "native/net/session_table.cpp",
            "native/net/sender.cpp",
            "native/net/receiver.cpp",
            "native/net/data_path.cpp",
            "native/net/swarm.cpp"
          ],
          "include_dirs": ["native/net"],
          "defines": ["SIGHTLINE_NATIVE_UDP=1"]
        }],
        ["sightline_pgo=='generate'", {
          "cflags_cc": ["-fprofile-generate=<(sightline_pgo_dir)", "-fprofile-update=atomic"],
          "ldflags": ["-fprofile-generate=<(sightline_pgo_dir)"]
        }],
        ["sightline_pgo=='use'", {
          "defines": ["SIGHTLINE_PGO=1"],
          "cflags_cc": ["-fprofile-use=<(sightline_pgo_dir)", "-fprofile-correction", "-Wno-error=coverage-mismatch", "-Werror=missing-profile"]
        }]
      ]
    }
  ]
}
