#ifndef CNETLINK_H
#define CNETLINK_H
// Kernel UAPI headers for rtnetlink, plus the few things Swift cannot import
// (function-like macros, _GNU_SOURCE-only calls). No logic lives here.
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if_link.h>
#include <linux/if_addr.h>
#include <linux/if_arp.h>
#include <linux/if.h>
#include <linux/fib_rules.h>
// sock_diag (NETLINK_SOCK_DIAG): inet_diag_req_v2 and inet_diag_msg, for the stall detector.
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif
#ifndef NETLINK_GET_STRICT_CHK
#define NETLINK_GET_STRICT_CHK 12
#endif
#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif

/// setns(2) is declared by glibc only under _GNU_SOURCE.
int cnetlink_setns(int fd, int nstype);
/// CLONE_NEWNET, for cnetlink_setns.
int cnetlink_clone_newnet(void);

#endif
