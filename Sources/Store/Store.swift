import Gossip
