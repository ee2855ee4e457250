import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
@testable import Reachability

/// `ReachdContract` against what packaging ships: the introspection XML declares exactly its
/// members with their signatures and argument names, and documents its names, errors and bounds;
/// the bus policy grants its name and interfaces. (DaemonBusTests compares the live daemon with
/// the same XML.) Pure: no bus, no root.
struct BusContractTests {
    static let packaging = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("packaging").path

    static func shipped(_ file: String) throws -> String {
        try String(contentsOfFile: packaging + "/" + file, encoding: .utf8)
    }

    @Test func introspectionXMLDeclaresTheContractsMembers() throws {
        let xml = try Self.shipped("org.reachd.Reachability1.xml")
        let interfaces = try DaemonBusTests.InterfaceXML.interfaces(in: xml)
        #expect(interfaces.keys.sorted() == [ReachdContract.interface, ReachdContract.pathInterface, ReachdContract.watchInterface])
        for (interface, members) in [
            (ReachdContract.interface, ReachdContract.serviceMembers), (ReachdContract.watchInterface, ReachdContract.watchMembers),
            (ReachdContract.pathInterface, ReachdContract.pathMembers),
        ] {
            let declared = ["<interface name=\"\(interface)\">"] + members.flatMap(Self.elements) + ["</interface>"]
            #expect(interfaces[interface] == declared, "\(interface): shipped\n\((interfaces[interface] ?? []).joined(separator: "\n"))")
        }
    }

    @Test func introspectionXMLDocumentsTheNamesErrorsAndBounds() throws {
        let comments = DaemonBusTests.InterfaceXML.comments(in: try Self.shipped("org.reachd.Reachability1.xml"))
        let milliseconds = ReachdContract.maximumCheckTimeout / .milliseconds(1)
        for text in [
            "Bus name   \(ReachdContract.busName)", "Object     \(ReachdContract.objectPath)",
            "Interface  \(ReachdContract.interface)", "Watches    \(ReachdContract.watchPathNamespace)/N, interface \(ReachdContract.watchInterface)",
            "Paths      \(ReachdContract.watchPathNamespace)/N, interface \(ReachdContract.pathInterface)",
            ReachdContract.PathOption.requiredKind, ReachdContract.PathOption.prohibitedKinds,
            ReachdContract.ErrorName.invalidTarget, ReachdContract.ErrorName.limitExceeded, ReachdContract.ErrorName.timeout,
            "at most \(Int(milliseconds))",
        ] {
            #expect(comments.contains(text), "the XML's comment does not say \"\(text)\"")
        }
    }

    @Test func busPolicyGrantsTheContractsNameAndInterfaces() throws {
        let policy = try Self.shipped("org.reachd.Reachability1.conf")
        func values(_ attribute: String) -> Set<String> {
            let pattern = try! NSRegularExpression(pattern: attribute + "=\"([^\"]*)\"")
            let range = NSRange(policy.startIndex..., in: policy)
            return Set(pattern.matches(in: policy, range: range).map { String(policy[Range($0.range(at: 1), in: policy)!]) })
        }
        #expect(values("own") == [ReachdContract.busName])
        #expect(values("send_destination") == [ReachdContract.busName])
        #expect(values("receive_sender") == [ReachdContract.busName])
        #expect(values("send_interface").isSuperset(of: [ReachdContract.interface, ReachdContract.watchInterface]))
    }

    /// A member as DaemonBusTests.InterfaceXML canonicalizes its element: attributes sorted.
    static func elements(_ member: BusVTable.Member) -> [String] {
        switch member {
        case let .property(name, signature, emitsChange):
            let constant = "<annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"const\">"
            return ["<property access=\"read\" name=\"\(name)\" type=\"\(signature)\">"]
                + (emitsChange ? [] : [constant, "</annotation>"]) + ["</property>"]
        case let .method(name, signature, result, names):
            let types = completeTypes("\(signature)").map { ($0, "in") } + completeTypes("\(result)").map { ($0, "out") }
            let arguments = zip(types, argumentNames(names)).flatMap { type, argument in
                ["<arg direction=\"\(type.1)\" name=\"\(argument)\" type=\"\(type.0)\">", "</arg>"]
            }
            return ["<method name=\"\(name)\">"] + arguments + ["</method>"]
        case let .signal(name, signature, names):
            let arguments = zip(completeTypes("\(signature)"), argumentNames(names)).flatMap { type, argument in
                ["<arg name=\"\(argument)\" type=\"\(type)\">", "</arg>"]
            }
            return ["<signal name=\"\(name)\">"] + arguments + ["</signal>"]
        }
    }

    static func argumentNames(_ names: StaticString) -> [String] {
        "\(names)".split(separator: "\0").map(String.init)
    }

    /// "usa{sv}" -> ["u", "s", "a{sv}"].
    static func completeTypes(_ signature: String) -> [String] {
        var types: [String] = []
        var current = ""
        var depth = 0
        for character in signature {
            current.append(character)
            switch character {
            case "(", "{": depth += 1
            case ")", "}": depth -= 1
            default: break
            }
            if depth == 0, character != "a" {
                types.append(current)
                current = ""
            }
        }
        return types
    }

    @Test func signaturesSplitIntoCompleteTypes() {
        #expect(Self.completeTypes("usassa{sv}") == ["u", "s", "as", "s", "a{sv}"])
        #expect(Self.completeTypes("a(issuas)ast") == ["a(issuas)", "as", "t"])
        #expect(Self.completeTypes("") == [])
    }
}
