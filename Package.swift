// swift-tools-version:6.0
import PackageDescription

// Dependencies point downwards only (docs/ARCHITECTURE in ../shared/DESIGN.md):
// PeerNode → Store → Gossip → Crypto → CSodium; Store → CSQLite;
// PeerNode → Discovery → Reactor; PeerNode → WebSocket → Reactor → CEpoll;
// PeerNode → TermUI (depends on nothing), ChatText → NetworkText;
// WebSocket → NetworkText (close reasons are peer text); Gossip → NetworkText
// (a room name or nick holds only what the sanitizer prints as itself).
let package = Package(
    name: "peernode",
    products: [
        .executable(name: "peernode", targets: ["PeerNode"]),
        .executable(name: "peernode-bench", targets: ["PeerNodeBench"]),
        .executable(name: "peernode-ws-echo", targets: ["WSEcho"]),
        // libFuzzer targets: `swift build --sanitize fuzzer --product fuzz-…` (see make fuzz).
        .executable(name: "fuzz-frames", targets: ["FuzzFrames"]),
        .executable(name: "fuzz-handshake", targets: ["FuzzHandshake"]),
        .executable(name: "fuzz-envelope", targets: ["FuzzEnvelope"]),
        .executable(name: "fuzz-announcement", targets: ["FuzzAnnouncement"]),
        .executable(name: "fuzz-link", targets: ["FuzzLink"]),
        .executable(name: "fuzz-ui", targets: ["FuzzUI"]),
        .executable(name: "fuzz-gossip", targets: ["FuzzGossip"]),
        .executable(name: "fuzz-overlay", targets: ["FuzzOverlay"]),
        .executable(name: "fuzz-accounts", targets: ["FuzzAccounts"]),
    ],
    targets: [
        .systemLibrary(
            name: "CSodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(name: "CEpoll"),
        // glibc's malloc_trim: a node gives memory back after a burst.
        .systemLibrary(name: "CMalloc"),
        .target(name: "Crypto", dependencies: ["CSodium"]),
        // One epoll thread: descriptors, timers, signals, work from other threads; typed errno errors.
        .target(name: "Reactor", dependencies: ["CEpoll"]),
        // RFC 6455 over non-blocking sockets; knows nothing of chat.
        .target(name: "WebSocket", dependencies: ["Reactor", "CEpoll", "NetworkText"]),
        // Text from the network made inert for screens and logs (`PeerText`,
        // `TerminalText`); depends on nothing.
        .target(name: "NetworkText"),
        .target(name: "Gossip", dependencies: ["Crypto", "ChatText", "NetworkText"]),
        // splitmix64, seeded: for simulations, tests and fuzzing; depends on nothing.
        .target(name: "Seeded"),
        // The node's pure parts (summaries of what peers declared, claims about our history): no I/O.
        .target(name: "NodeCore", dependencies: ["Gossip", "Crypto", "NetworkText"]),
        .target(name: "Store", dependencies: ["Gossip", "Crypto", "CSQLite"]),
        // A whole LAN in one process: the real membership cores and the tree push's rules, seeded (docs/SCALE.md).
        .target(name: "OverlaySimulation", dependencies: ["NodeCore", "Gossip", "Crypto", "Seeded"]),
        // LAN discovery: signed, sealed UDP multicast announcements; knows nothing of links.
        .target(name: "Discovery", dependencies: ["Crypto", "Reactor", "CEpoll"]),
        // The line-mode terminal: keys, line editing, prompt redraw; knows nothing of chat.
        .target(name: "TermUI"),
        // Text at the terminal boundary: the command line the user types, and
        // network text made inert (control characters, look-alike nicks).
        .target(name: "ChatText", dependencies: ["NetworkText"]),
        .executableTarget(name: "PeerNode", dependencies: ["Store", "Gossip", "NodeCore", "Crypto", "WebSocket", "Reactor", "Discovery", "TermUI", "ChatText", "NetworkText", "CMalloc"]),
        // The benchmark measures the machine's own ceilings, so it may call
        // libsodium and SQLite directly; no product code does.
        .executableTarget(
            name: "PeerNodeBench",
            dependencies: ["Store", "Gossip", "Crypto", "CSodium", "CSQLite", "WebSocket", "Reactor", "OverlaySimulation", "NodeCore", "CEpoll"],
            path: "Benchmarks/PeerNodeBench"
        ),
        .executableTarget(name: "WSEcho", dependencies: ["WebSocket", "Reactor"], path: "Benchmarks/WSEcho"),
        .executableTarget(name: "FuzzFrames", dependencies: ["WebSocket", "FuzzSupport"], path: "Fuzz/FuzzFrames"),
        .executableTarget(name: "FuzzHandshake", dependencies: ["WebSocket", "FuzzSupport"], path: "Fuzz/FuzzHandshake"),
        .executableTarget(name: "FuzzEnvelope", dependencies: ["Gossip", "Crypto", "FuzzSupport"], path: "Fuzz/FuzzEnvelope"),
        .executableTarget(name: "FuzzAnnouncement", dependencies: ["Discovery", "Crypto", "FuzzSupport"], path: "Fuzz/FuzzAnnouncement"),
        .executableTarget(name: "FuzzLink", dependencies: ["Gossip", "Crypto", "FuzzSupport"], path: "Fuzz/FuzzLink"),
        .executableTarget(name: "FuzzGossip", dependencies: ["Gossip", "NodeCore", "Crypto", "FuzzSupport"], path: "Fuzz/FuzzGossip"),
        .executableTarget(name: "FuzzOverlay", dependencies: ["Gossip", "NodeCore", "Crypto", "NetworkText", "FuzzSupport"], path: "Fuzz/FuzzOverlay"),
        .executableTarget(name: "FuzzUI", dependencies: ["TermUI", "ChatText", "FuzzSupport"], path: "Fuzz/FuzzUI"),
        .executableTarget(name: "FuzzAccounts", dependencies: ["Gossip", "NodeCore", "Crypto", "FuzzSupport"], path: "Fuzz/FuzzAccounts"),
        // What every fuzz target shares: a broken invariant aborts, so libFuzzer keeps the input.
        .target(name: "FuzzSupport", dependencies: ["Seeded"], path: "Fuzz/FuzzSupport"),
        // Helpers every test target shares: temporary directories, hex, file modes.
        .target(name: "TestSupport", dependencies: ["Crypto", "Seeded"], path: "Tests/TestSupport"),
        .testTarget(name: "WebSocketTests", dependencies: ["WebSocket", "Reactor", "TestSupport"], exclude: ["Peers"]),
        .testTarget(name: "ReactorTests", dependencies: ["Reactor", "CEpoll", "TestSupport"]),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "CSodium", "Seeded", "TestSupport"], exclude: ["Peers"]),
        .testTarget(name: "GossipTests", dependencies: ["Gossip", "Crypto", "NetworkText", "TestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "StoreTests", dependencies: ["Store", "Gossip", "Crypto", "TestSupport"]),
        .testTarget(name: "TermUITests", dependencies: ["TermUI"]),
        // The node core's tests: event lists and a fake clock, no processes, no sleeps.
        .testTarget(name: "NodeCoreTests", dependencies: ["NodeCore", "Gossip", "Crypto", "NetworkText", "TestSupport", "OverlaySimulation"]),
        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery", "Reactor", "Crypto", "TestSupport"]),
        .testTarget(name: "PeerNodeTests", dependencies: ["PeerNode", "NodeCore", "Discovery", "Store", "Gossip", "Crypto", "WebSocket", "Reactor", "ChatText", "TestSupport"], exclude: ["Peers", "Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)
