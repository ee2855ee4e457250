/// rtnetlink numbers from the kernel UAPI (<linux/rtnetlink.h>, <linux/if_link.h>, <linux/if_addr.h>).
/// Spelled out because the headers mix macros and enums that Swift imports with different types;
/// these values are kernel ABI and never change.
enum RT {
    // nlmsghdr.nlmsg_type
    static let noop: UInt16 = 1  // NLMSG_NOOP
    static let error: UInt16 = 2  // NLMSG_ERROR
    static let done: UInt16 = 3  // NLMSG_DONE
    static let newLink: UInt16 = 16  // RTM_NEWLINK
    static let delLink: UInt16 = 17
    static let getLink: UInt16 = 18
    static let newAddress: UInt16 = 20  // RTM_NEWADDR
    static let delAddress: UInt16 = 21
    static let getAddress: UInt16 = 22
    static let newRoute: UInt16 = 24  // RTM_NEWROUTE
    static let delRoute: UInt16 = 25
    static let getRoute: UInt16 = 26
    static let newNeighbour: UInt16 = 28  // RTM_NEWNEIGH
    static let delNeighbour: UInt16 = 29
    static let getNeighbour: UInt16 = 30
    static let newRule: UInt16 = 32  // RTM_NEWRULE
    static let delRule: UInt16 = 33
    static let newNDUserOption: UInt16 = 68  // RTM_NEWNDUSEROPT: an ND option the kernel passes on

    // nlmsghdr.nlmsg_flags
    static let flagRequest: UInt16 = 0x1  // NLM_F_REQUEST
    static let flagMulti: UInt16 = 0x2  // NLM_F_MULTI
    static let flagAck: UInt16 = 0x4  // NLM_F_ACK
    static let flagDumpInterrupted: UInt16 = 0x10  // NLM_F_DUMP_INTR
    static let flagDump: UInt16 = 0x300  // NLM_F_ROOT | NLM_F_MATCH
    static let flagReplace: UInt16 = 0x100  // NLM_F_REPLACE (on NEW requests/notifications)

    // IFLA_* (ifinfomsg attributes)
    static let linkName: UInt16 = 3  // IFLA_IFNAME
    static let linkMaster: UInt16 = 10  // IFLA_MASTER
    static let linkOperState: UInt16 = 16  // IFLA_OPERSTATE
    static let linkInfo: UInt16 = 18  // IFLA_LINKINFO (nested)
    static let linkInfoKind: UInt16 = 1  // IFLA_INFO_KIND inside IFLA_LINKINFO

    // IFA_* (ifaddrmsg attributes)
    static let addressAddress: UInt16 = 1  // IFA_ADDRESS (the peer on point-to-point links)
    static let addressLocal: UInt16 = 2  // IFA_LOCAL
    static let addressFlags: UInt16 = 8  // IFA_FLAGS (u32, supersedes ifa_flags)
    static let addressCacheInfo: UInt16 = 6  // IFA_CACHEINFO (struct ifa_cacheinfo: lifetimes)

    // RTA_* (rtmsg attributes)
    static let routeDestination: UInt16 = 1  // RTA_DST
    static let routeOutputInterface: UInt16 = 4  // RTA_OIF
    static let routeGateway: UInt16 = 5  // RTA_GATEWAY
    static let routePriority: UInt16 = 6  // RTA_PRIORITY (metric)
    static let routePreferredSource: UInt16 = 7  // RTA_PREFSRC
    static let routeMultipath: UInt16 = 9  // RTA_MULTIPATH
    static let routeUID: UInt16 = 25  // RTA_UID: whose traffic a lookup asks for (uidrange rules)
    static let routeTable: UInt16 = 15  // RTA_TABLE
    static let routeCacheInfo: UInt16 = 12  // RTA_CACHEINFO (struct rta_cacheinfo: expiry)
    static let routeVia: UInt16 = 18  // RTA_VIA

    // NDA_* (ndmsg attributes)
    static let neighbourDestination: UInt16 = 1  // NDA_DST: the neighbour's IP address
    static let neighbourLinkLayerAddress: UInt16 = 2  // NDA_LLADDR: its link-layer (MAC) address
    static let neighbourCacheInfo: UInt16 = 3  // NDA_CACHEINFO: ages of its last confirmation, use and update

    // struct nduseroptmsg and what follows it (<linux/rtnetlink.h>, <netinet/icmp6.h>)
    static let ndUserOptionSourceAddress: UInt16 = 1  // NDUSEROPT_SRCADDR: the sender of the ND message
    static let icmpRouterAdvertisement: UInt8 = 134  // ND_ROUTER_ADVERT
    static let ndOptionCaptivePortal: UInt8 = 37  // RFC 8910
    static let ndOptionPREF64: UInt8 = 38  // RFC 8781

    // rtmsg.rtm_flags
    static let routeCloned: UInt32 = 0x200  // RTM_F_CLONED

    // Address families
    static let familyUnspecified: UInt8 = 0  // AF_UNSPEC
}
