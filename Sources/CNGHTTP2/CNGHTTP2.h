#ifndef C_NGHTTP2_H
#define C_NGHTTP2_H
// libnghttp2, as Debian ships it (libnghttp2-dev 1.52, with Debian's backports of the Rapid Reset and
// CONTINUATION-flood fixes: nghttp2_option_set_stream_reset_rate_limit, _set_max_continuations).
// The 1.52 API: the nghttp2_ssize calls came later. No macro is replaced here.
#include <nghttp2/nghttp2.h>
#endif
