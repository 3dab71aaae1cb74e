#ifndef C_ZLIB_H
#define C_ZLIB_H
// zlib, as Debian ships it (zlib1g-dev): atsproxyctl report inflates logrotate's compressed logs.
#include <zlib.h>
#endif
