/// rtnetlink numbers from the kernel UAPI (<linux/rtnetlink.h>, <linux/if_link.h>, <linux/if_addr.h>).
/// Spelled out because the headers mix macros and enums that Swift imports with different types;
/// these values are kernel ABI and never change.
package enum RT {
    // nlmsghdr.nlmsg_type
    package static let noop: UInt16 = 1  // NLMSG_NOOP
    package static let error: UInt16 = 2  // NLMSG_ERROR
    package static let done: UInt16 = 3  // NLMSG_DONE
    package static let newLink: UInt16 = 16  // RTM_NEWLINK
    package static let delLink: UInt16 = 17
    package static let getLink: UInt16 = 18
    package static let newAddress: UInt16 = 20  // RTM_NEWADDR
    package static let delAddress: UInt16 = 21
    package static let getAddress: UInt16 = 22
    package static let newRoute: UInt16 = 24  // RTM_NEWROUTE
    package static let delRoute: UInt16 = 25
    package static let getRoute: UInt16 = 26
    package static let newNeighbour: UInt16 = 28  // RTM_NEWNEIGH
    package static let delNeighbour: UInt16 = 29
    package static let getNeighbour: UInt16 = 30
    package static let newRule: UInt16 = 32  // RTM_NEWRULE
    package static let delRule: UInt16 = 33
    package static let newNDUserOption: UInt16 = 68  // RTM_NEWNDUSEROPT: an ND option the kernel passes on

    // nlmsghdr.nlmsg_flags
    package static let flagRequest: UInt16 = 0x1  // NLM_F_REQUEST
    package static let flagMulti: UInt16 = 0x2  // NLM_F_MULTI
    package static let flagAck: UInt16 = 0x4  // NLM_F_ACK
    package static let flagDumpInterrupted: UInt16 = 0x10  // NLM_F_DUMP_INTR
    package static let flagDump: UInt16 = 0x300  // NLM_F_ROOT | NLM_F_MATCH
    package static let flagReplace: UInt16 = 0x100  // NLM_F_REPLACE (on NEW requests/notifications)

    // IFLA_* (ifinfomsg attributes)
    package static let linkName: UInt16 = 3  // IFLA_IFNAME
    package static let linkMaster: UInt16 = 10  // IFLA_MASTER
    package static let linkOperState: UInt16 = 16  // IFLA_OPERSTATE
    package static let linkInfo: UInt16 = 18  // IFLA_LINKINFO (nested)
    package static let linkInfoKind: UInt16 = 1  // IFLA_INFO_KIND inside IFLA_LINKINFO

    // IFA_* (ifaddrmsg attributes)
    package static let addressAddress: UInt16 = 1  // IFA_ADDRESS (the peer on point-to-point links)
    package static let addressLocal: UInt16 = 2  // IFA_LOCAL
    package static let addressFlags: UInt16 = 8  // IFA_FLAGS (u32, supersedes ifa_flags)
    package static let addressCacheInfo: UInt16 = 6  // IFA_CACHEINFO (struct ifa_cacheinfo: lifetimes)

    // RTA_* (rtmsg attributes)
    package static let routeDestination: UInt16 = 1  // RTA_DST
    package static let routeOutputInterface: UInt16 = 4  // RTA_OIF
    package static let routeGateway: UInt16 = 5  // RTA_GATEWAY
    package static let routePriority: UInt16 = 6  // RTA_PRIORITY (metric)
    package static let routePreferredSource: UInt16 = 7  // RTA_PREFSRC
    package static let routeMultipath: UInt16 = 9  // RTA_MULTIPATH
    package static let routeUID: UInt16 = 25  // RTA_UID: whose traffic a lookup asks for (uidrange rules)
    package static let routeTable: UInt16 = 15  // RTA_TABLE
    package static let routeCacheInfo: UInt16 = 12  // RTA_CACHEINFO (struct rta_cacheinfo: expiry)
    package static let routeVia: UInt16 = 18  // RTA_VIA

    // NDA_* (ndmsg attributes)
    package static let neighbourDestination: UInt16 = 1  // NDA_DST: the neighbour's IP address
    package static let neighbourLinkLayerAddress: UInt16 = 2  // NDA_LLADDR: its link-layer (MAC) address
    package static let neighbourCacheInfo: UInt16 = 3  // NDA_CACHEINFO: ages of its last confirmation, use and update

    // struct nduseroptmsg and what follows it (<linux/rtnetlink.h>, <netinet/icmp6.h>)
    package static let ndUserOptionSourceAddress: UInt16 = 1  // NDUSEROPT_SRCADDR: the sender of the ND message
    package static let icmpRouterAdvertisement: UInt8 = 134  // ND_ROUTER_ADVERT
    package static let ndOptionCaptivePortal: UInt8 = 37  // RFC 8910
    package static let ndOptionPREF64: UInt8 = 38  // RFC 8781

    // rtmsg.rtm_flags
    package static let routeCloned: UInt32 = 0x200  // RTM_F_CLONED

    // Address families
    package static let familyUnspecified: UInt8 = 0  // AF_UNSPEC
}
