#define _GNU_SOURCE
#include <sched.h>
#include "CNetlink.h"

int cnetlink_setns(int fd, int nstype) { return setns(fd, nstype); }
int cnetlink_clone_newnet(void) { return CLONE_NEWNET; }
