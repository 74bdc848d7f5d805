#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
// Hide APIs deprecated in OpenSSL 3.0 so Swift cannot reach for them by accident.
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>
#include <openssl/bn.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/bio.h>

// Function-like macros are not imported into Swift; these wrap the ones we use.
static inline void shim_OPENSSL_free(void *p) { OPENSSL_free(p); }
static inline long shim_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int v) {
    return SSL_CTX_set_min_proto_version(ctx, v);
}
static inline long shim_SSL_CTX_set_mode(SSL_CTX *ctx, long m) { return SSL_CTX_set_mode(ctx, m); }
static inline long shim_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
static inline int shim_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *s) {
    return (int)SSL_CTX_set1_groups_list(ctx, s);
}
static inline long shim_SSL_set_tlsext_host_name(SSL *s, const char *name) {
    return SSL_set_tlsext_host_name(s, name);
}
#endif
