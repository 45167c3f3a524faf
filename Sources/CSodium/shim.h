#ifndef PEERNODE_CSODIUM_SHIM_H
#define PEERNODE_CSODIUM_SHIM_H
#include <sodium.h>
#endif
