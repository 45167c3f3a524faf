print("peernode")
