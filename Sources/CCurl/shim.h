// libcurl, loaded with dlopen(3) with the first HTTP(S) exchange reachd makes (a network's
// captive-portal API, the connectivity probe), so a reachd that makes none maps none of it
// (BENCHMARKS.md has what it costs). Its
// declarations come from curl/curl.h (libcurl4-openssl-dev); reachd is not linked with it. The
// functions are looked up once; Swift cannot call curl_easy_setopt, a variadic function, so the
// typed wrappers below pass one argument of each kind through the variadic pointer. No logic.
#include <curl/curl.h>
#include <dlfcn.h>
#include <stddef.h>

typedef struct {
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLcode (*global_init)(long);
    CURLHcode (*easy_header)(CURL *, const char *, size_t, unsigned int, int, struct curl_header **);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
} reachd_curl;

// 0 when every function was found in `library` (kept open for the process's life), else -1;
// dlerror() says why.
static inline int reachd_curl_load(const char *library, reachd_curl *curl) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!handle) return -1;
    curl->easy_init = (CURL * (*)(void)) dlsym(handle, "curl_easy_init");
    curl->easy_setopt = (CURLcode(*)(CURL *, CURLoption, ...))dlsym(handle, "curl_easy_setopt");
    curl->easy_getinfo = (CURLcode(*)(CURL *, CURLINFO, ...))dlsym(handle, "curl_easy_getinfo");
    curl->easy_cleanup = (void (*)(CURL *))dlsym(handle, "curl_easy_cleanup");
    curl->easy_strerror = (const char *(*)(CURLcode))dlsym(handle, "curl_easy_strerror");
    curl->slist_append = (struct curl_slist * (*)(struct curl_slist *, const char *)) dlsym(handle, "curl_slist_append");
    curl->slist_free_all = (void (*)(struct curl_slist *))dlsym(handle, "curl_slist_free_all");
    curl->global_init = (CURLcode(*)(long))dlsym(handle, "curl_global_init");
    curl->easy_header = (CURLHcode(*)(CURL *, const char *, size_t, unsigned int, int, struct curl_header **))dlsym(
        handle, "curl_easy_header");
    curl->multi_init = (CURLM * (*)(void)) dlsym(handle, "curl_multi_init");
    curl->multi_add_handle = (CURLMcode(*)(CURLM *, CURL *))dlsym(handle, "curl_multi_add_handle");
    curl->multi_remove_handle = (CURLMcode(*)(CURLM *, CURL *))dlsym(handle, "curl_multi_remove_handle");
    curl->multi_perform = (CURLMcode(*)(CURLM *, int *))dlsym(handle, "curl_multi_perform");
    curl->multi_poll = (CURLMcode(*)(CURLM *, struct curl_waitfd *, unsigned int, int, int *))dlsym(handle, "curl_multi_poll");
    curl->multi_wakeup = (CURLMcode(*)(CURLM *))dlsym(handle, "curl_multi_wakeup");
    curl->multi_info_read = (CURLMsg * (*)(CURLM *, int *)) dlsym(handle, "curl_multi_info_read");
    if (!curl->easy_init || !curl->easy_setopt || !curl->easy_getinfo || !curl->easy_cleanup
        || !curl->easy_strerror || !curl->slist_append || !curl->slist_free_all || !curl->global_init || !curl->easy_header
        || !curl->multi_init || !curl->multi_add_handle || !curl->multi_remove_handle || !curl->multi_perform
        || !curl->multi_poll || !curl->multi_wakeup || !curl->multi_info_read)
        return -1;
    return 0;
}

static inline CURLcode reachd_curl_setopt_long(const reachd_curl *curl, CURL *easy, CURLoption option, long value) {
    return curl->easy_setopt(easy, option, value);
}

static inline CURLcode reachd_curl_setopt_pointer(const reachd_curl *curl, CURL *easy, CURLoption option, const void *value) {
    return curl->easy_setopt(easy, option, value);
}

typedef size_t (*reachd_curl_write)(char *data, size_t size, size_t count, void *context);

static inline CURLcode reachd_curl_setopt_write(const reachd_curl *curl, CURL *easy, reachd_curl_write function) {
    return curl->easy_setopt(easy, CURLOPT_WRITEFUNCTION, function);
}

typedef int (*reachd_curl_sockopt)(void *context, curl_socket_t fd, curlsocktype purpose);

static inline CURLcode reachd_curl_setopt_sockopt(const reachd_curl *curl, CURL *easy, reachd_curl_sockopt function) {
    return curl->easy_setopt(easy, CURLOPT_SOCKOPTFUNCTION, function);
}

static inline CURLcode reachd_curl_getinfo_long(const reachd_curl *curl, CURL *easy, CURLINFO info, long *value) {
    return curl->easy_getinfo(easy, info, value);
}

// The value of the `index`th header `name` of the last response (and in `amount` how many there
// are), or NULL when it has none.
static inline const char *reachd_curl_header(const reachd_curl *curl, CURL *easy, const char *name, size_t index, size_t *amount) {
    struct curl_header *header = NULL;
    if (curl->easy_header(easy, name, index, CURLH_HEADER, -1, &header) != CURLHE_OK || !header) return NULL;
    *amount = header->amount;
    return header->value;
}

// The transfer a finished message names and how it ended; 0 when `message` tells of no end.
static inline int reachd_curl_done(const CURLMsg *message, CURL **easy, CURLcode *result) {
    if (!message || message->msg != CURLMSG_DONE) return 0;
    *easy = message->easy_handle;
    *result = message->data.result;
    return 1;
}

static inline CURLcode reachd_curl_getinfo_string(const reachd_curl *curl, CURL *easy, CURLINFO info, char **value) {
    return curl->easy_getinfo(easy, info, value);
}
