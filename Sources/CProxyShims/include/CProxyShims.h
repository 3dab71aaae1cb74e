#ifndef C_PROXY_SHIMS_H
#define C_PROXY_SHIMS_H
// One-line wrappers for C macros that Swift cannot import. Each says which macro it replaces and
// why; delete a shim when Swift learns to import its macro.
// The same API level as COpenSSL's umbrella header, so both modules see identical declarations.
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1
#include <openssl/x509.h>

/// XN_FLAG_RFC2253: an OR of casts of other macros, which the Swift importer skips.
unsigned long CProxyShims_XN_FLAG_RFC2253(void);

#endif
