#ifndef C_LIBEVENT_H
#define C_LIBEVENT_H
// libevent's <event2/event-config.h> defines _GNU_SOURCE before it pulls in libc headers; include
// libc first so <features.h> sees the same macros SwiftGlibc saw (otherwise fd_set differs between
// modules and the build fails).
#include <sys/types.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <event2/dns.h>
#include <event2/util.h>
#endif
