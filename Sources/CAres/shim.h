#ifndef CARES_SHIM_H
#define CARES_SHIM_H
// c-ares (libc-ares-dev, 1.18 or later) for Swift: the library's own header, nothing else.
// Every macro the resolver uses (ARES_OPT_*, ARES_E*, ARES_SOCKET_BAD, ARES_AI_*) is a plain
// integer constant that Swift imports as is, so no helpers are needed here.
#include <ares.h>

#endif
