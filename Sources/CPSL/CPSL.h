#ifndef C_PSL_H
#define C_PSL_H
// libpsl, as Debian ships it (libpsl-dev), over the publicsuffix package's list: Apple's name match
// never lets a certificate's wildcard stand directly over a public suffix of the list's ICANN section
// (*.co.uk), so the certificate facts name such wildcards. No macro is replaced here.
#include <libpsl.h>
#endif
