#ifndef C_PROXY_SHIMS_H
#define C_PROXY_SHIMS_H
// One-line wrappers for C macros that Swift cannot import. Each says which macro it replaces and
// why; delete a shim when Swift learns to import its macro.

// The same API level as COpenSSL's umbrella header, so both modules see identical declarations.
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>

/// XN_FLAG_RFC2253: an OR of casts of other macros, which the Swift importer skips.
unsigned long CProxyShims_XN_FLAG_RFC2253(void);

/// SSL_CTX_set_min_proto_version / SSL_CTX_set_max_proto_version: macros over SSL_CTX_ctrl.
int CProxyShims_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version);
int CProxyShims_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version);

/// SSL_CTX_set1_groups_list: a macro over SSL_CTX_ctrl (the key-exchange groups a client offers).
int CProxyShims_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list);

/// SSL_set_tlsext_host_name: a macro over SSL_ctrl (SNI).
int CProxyShims_SSL_set_tlsext_host_name(SSL *ssl, const char *name);

/// SSL_get_extms_support: a macro over SSL_ctrl; 1 when Extended Master Secret was negotiated.
int CProxyShims_SSL_get_extms_support(SSL *ssl);

/// SSL_get_peer_signature_nid: a macro over SSL_ctrl; the digest of the peer's handshake signature.
int CProxyShims_SSL_get_peer_signature_nid(SSL *ssl, int *nid);

/// SSL_get_negotiated_group: a macro over SSL_ctrl; the key-exchange group's NID, or
/// TLSEXT_nid_unknown | the IANA codepoint for a group OpenSSL has no NID for (the ML-KEM hybrids).
int CProxyShims_SSL_get_negotiated_group(SSL *ssl);

/// BIO_set_retry_read: a macro over BIO_set_flags; tells OpenSSL a read found no bytes yet.
void CProxyShims_BIO_set_retry_read(BIO *bio);

/// BIO_clear_retry_flags: a macro over BIO_clear_flags.
void CProxyShims_BIO_clear_retry_flags(BIO *bio);

/// SSL_CTX_set1_sigalgs_list: a macro over SSL_CTX_ctrl (the signature algorithms a client offers).
int CProxyShims_SSL_CTX_set1_sigalgs_list(SSL_CTX *ctx, const char *list);

/// SSL_CTX_set_max_cert_list: a macro over SSL_CTX_ctrl (the largest certificate message accepted).
long CProxyShims_SSL_CTX_set_max_cert_list(SSL_CTX *ctx, long size);

/// SSL_CTX_set_session_cache_mode: a macro over SSL_CTX_ctrl (SSL_SESS_CACHE_OFF for the device side).
long CProxyShims_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode);

/// SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS): SSL_CTX_set_mode is a macro over SSL_CTX_ctrl
/// (an idle session's record buffers, about 34 KiB, are freed until it reads or writes again).
long CProxyShims_SSL_CTX_release_buffers(SSL_CTX *ctx);

/// SSL_OP_NO_TICKET: SSL_OP_BIT(14), a function-like macro the Swift importer skips.
uint64_t CProxyShims_SSL_OP_NO_TICKET(void);

/// SSL_OP_CIPHER_SERVER_PREFERENCE: SSL_OP_BIT(22), a function-like macro the Swift importer skips.
uint64_t CProxyShims_SSL_OP_CIPHER_SERVER_PREFERENCE(void);

/// SSL_CTX_set_tlsext_servername_callback: a macro over SSL_CTX_callback_ctrl (the server's SNI hook).
long CProxyShims_SSL_CTX_set_tlsext_servername_callback(SSL_CTX *ctx, int (*callback)(SSL *, int *, void *));

/// EVP_EC_gen: a macro over the variadic EVP_PKEY_Q_keygen, which Swift cannot call (a new EC key).
EVP_PKEY *CProxyShims_EVP_EC_gen(const char *curve);

/// EVP_RSA_gen: a macro over the variadic EVP_PKEY_Q_keygen (a new RSA key, e = 65537).
EVP_PKEY *CProxyShims_EVP_RSA_gen(unsigned int bits);

/// SO_ORIGINAL_DST from <linux/netfilter_ipv4.h>: the getsockopt (level SOL_IP) that gives a
/// connection the firewall redirected (REDIRECT, DNAT) its original IPv4 destination. The linux
/// header clashes with glibc's <netinet/in.h> when both reach Swift, so only shims.c includes it.
int CProxyShims_SO_ORIGINAL_DST(void);

/// IP6T_SO_ORIGINAL_DST from <linux/netfilter_ipv6/ip6_tables.h>: the same for IPv6 (level SOL_IPV6).
int CProxyShims_IP6T_SO_ORIGINAL_DST(void);

#endif
