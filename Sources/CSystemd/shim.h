#ifndef REACHD_CSYSTEMD_SHIM_H
#define REACHD_CSYSTEMD_SHIM_H
// libsystemd for Swift: the public headers, plus static inline constructors for sd_bus_vtable
// entries, whose SD_BUS_* macros Swift cannot import. No logic lives here.
#include <malloc.h>
#include <signal.h>
#include <sys/epoll.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-bus-vtable.h>
#include <systemd/sd-event.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>
#include <systemd/sd-journal.h>

static inline sd_bus_vtable csystemd_vtable_start(uint64_t flags) {
    sd_bus_vtable v = SD_BUS_VTABLE_START(flags);
    return v;
}

static inline sd_bus_vtable csystemd_vtable_end(void) {
    sd_bus_vtable v = SD_BUS_VTABLE_END;
    return v;
}

/// `names`: the argument names, each followed by NUL, in order (in arguments, then out).
static inline sd_bus_vtable csystemd_vtable_method(
    const char *member, const char *signature, const char *result, const char *names,
    sd_bus_message_handler_t handler, uint64_t flags) {
    sd_bus_vtable v = {
        .type = _SD_BUS_VTABLE_METHOD,
        .flags = flags,
        .x = { .method = { .member = member, .signature = signature, .result = result,
                           .handler = handler, .offset = 0, .names = names } },
    };
    return v;
}

static inline sd_bus_vtable csystemd_vtable_property(
    const char *member, const char *signature, sd_bus_property_get_t getter, uint64_t flags) {
    sd_bus_vtable v = {
        .type = _SD_BUS_VTABLE_PROPERTY,
        .flags = flags,
        .x = { .property = { .member = member, .signature = signature, .get = getter, .set = NULL, .offset = 0 } },
    };
    return v;
}

static inline sd_bus_vtable csystemd_vtable_signal(const char *member, const char *signature, const char *names, uint64_t flags) {
    sd_bus_vtable v = {
        .type = _SD_BUS_VTABLE_SIGNAL,
        .flags = flags,
        .x = { .signal = { .member = member, .signature = signature, .names = names } },
    };
    return v;
}

static inline uint64_t csystemd_vtable_unprivileged(void) { return SD_BUS_VTABLE_UNPRIVILEGED; }
static inline uint64_t csystemd_vtable_emits_change(void) { return SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE; }
static inline uint64_t csystemd_vtable_const(void) { return SD_BUS_VTABLE_PROPERTY_CONST; }

static inline sd_bus_error csystemd_error_null(void) {
    sd_bus_error e = SD_BUS_ERROR_NULL;
    return e;
}

#endif
