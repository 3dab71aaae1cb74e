#include "CProxyShims.h"
// glibc's <netinet/in.h> first: the linux headers below then leave its definitions alone.
#include <netinet/in.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>

unsigned long CProxyShims_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }

int CProxyShims_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

int CProxyShims_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_groups_list(ctx, list);
}

int CProxyShims_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

int CProxyShims_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

int CProxyShims_SSL_get_extms_support(SSL *ssl) { return (int)SSL_get_extms_support(ssl); }

int CProxyShims_SSL_get_peer_signature_nid(SSL *ssl, int *nid) { return (int)SSL_get_peer_signature_nid(ssl, nid); }

int CProxyShims_SSL_get_negotiated_group(SSL *ssl) { return (int)SSL_get_negotiated_group(ssl); }

void CProxyShims_BIO_set_retry_read(BIO *bio) { BIO_set_retry_read(bio); }

void CProxyShims_BIO_clear_retry_flags(BIO *bio) { BIO_clear_retry_flags(bio); }

int CProxyShims_SSL_CTX_set1_sigalgs_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_sigalgs_list(ctx, list);
}

long CProxyShims_SSL_CTX_set_max_cert_list(SSL_CTX *ctx, long size) { return SSL_CTX_set_max_cert_list(ctx, size); }

long CProxyShims_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

long CProxyShims_SSL_CTX_release_buffers(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
}

uint64_t CProxyShims_SSL_OP_NO_TICKET(void) { return SSL_OP_NO_TICKET; }

uint64_t CProxyShims_SSL_OP_CIPHER_SERVER_PREFERENCE(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }

long CProxyShims_SSL_CTX_set_tlsext_servername_callback(SSL_CTX *ctx, int (*callback)(SSL *, int *, void *)) {
    return SSL_CTX_set_tlsext_servername_callback(ctx, callback);
}

EVP_PKEY *CProxyShims_EVP_EC_gen(const char *curve) { return EVP_EC_gen(curve); }

EVP_PKEY *CProxyShims_EVP_RSA_gen(unsigned int bits) { return EVP_RSA_gen(bits); }

int CProxyShims_SO_ORIGINAL_DST(void) { return SO_ORIGINAL_DST; }

int CProxyShims_IP6T_SO_ORIGINAL_DST(void) { return IP6T_SO_ORIGINAL_DST; }
