#ifndef C_OPENSSL_H
#define C_OPENSSL_H
// Hide everything OpenSSL 3 deprecates from Swift (it then reads "cannot find X"), so new code
// uses the 3.0 API.
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/objects.h>
#include <openssl/rand.h>
#endif
