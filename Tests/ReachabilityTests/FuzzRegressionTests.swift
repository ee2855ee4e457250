import Testing
@testable import Reachability

// Every input a fuzz target (Fuzz/Targets, scripts/fuzz) found wrong, fed to the same function:
// each must now get a clean answer. The inputs are also seeds in Fuzz/Corpus/TARGET, so the
// fuzzer starts from them. FUZZING.md lists them with what was wrong.

@Suite("Fuzz regressions: check targets")
struct TargetFuzzRegressionTests {
    /// fuzz-target: Swift's integer parsing takes a sign, so `-0` counted as one of inet_aton's
    /// numeric forms (which inet_aton refuses) and was refused as "a short, octal or single-number
    /// IPv4 form" instead of as the bad host name it is.
    @Test(arguments: ["-0", "+1", "0x+f.1", "1.-2", "+0x7f.0.0.1", "0x+1"])
    func signedNumbersAreNoInetAtonForm(_ text: String) {
        #expect(!HostName.isNumericForm(text))
        guard case let .failure(error) = HostName.validate(text) else {
            Issue.record("\(text) was taken for a host name")
            return
        }
        #expect(error.problem != .numericAddressForm, "\(error)")
        if case let .failure(error) = AddressTarget.parse(text) {
            #expect(!error.description.contains("inet_aton"), "\(error)")
        }
    }
}

@Suite("Fuzz regressions: addresses")
struct AddressFuzzRegressionTests {
    /// fuzz-target: `::%%\0\0\0\0\0\0\0B` was accepted with a scope no link can have (a NUL, a
    /// `%`); the scope must be a name the kernel could give a link, or an index.
    @Test(arguments: ["::%%\0\0\0\0\0\0\0B", "fe80::1%eth\00", "fe80::1%a b", "fe80::1%a:b", "fe80::1%.", "fe80::1%..", "fe80::1%\t", "fe80::1%a/b"])
    func aScopeNoLinkCanHaveIsRefused(_ text: String) {
        #expect(AddressTarget.parse(text) == .failure(.invalidScope(text)))
    }

    @Test(arguments: [("fe80::1%eth0", AddressTarget.Scope.name("eth0")), ("fe80::1%3", .index(3)), ("[fe80::1%wlp3s0]", .name("wlp3s0"))])
    func aScopeALinkCanHaveIsKept(_ text: String, _ scope: AddressTarget.Scope) {
        #expect((try? AddressTarget.parse(text).get())?.scope == scope)
    }

    /// inet_pton reads a C string, so before the fix the text ended at the NUL and `1.2.3.4\0junk`
    /// was the address 1.2.3.4.
    @Test(arguments: ["1.2.3.4\0junk", "::1\0", "\u{0}1.2.3.4", "2001:db8::1\0%eth0"])
    func aNulInTheAddressIsNoAddress(_ text: String) {
        #expect(IPAddress(text) == nil)
        guard case .failure = AddressTarget.parse(text) else {
            Issue.record("\(text.debugDescription) parsed as an address")
            return
        }
    }
}

@Suite("Fuzz regressions: durations")
struct DurationFuzzRegressionTests {
    /// fuzz-duration: `format` read `Duration.components`, which traps when the seconds do not fit
    /// an Int64; such durations are valid values (`.seconds(Int64.max) * 2`).
    @Test func formatTakesEveryDuration() {
        // The crasher's 16 bytes: seconds Int64.min, attoseconds 0x8400000000000020 as Int64.
        let found = Duration(secondsComponent: .min, attosecondsComponent: -8_935_141_660_703_064_032)
        #expect(DurationText.format(found) == "-9223372036854775816.93514166s")
        let huge = Duration.seconds(Int64.max) * 2
        #expect(DurationText.format(huge) == "18446744073709551614s")
        #expect(DurationText.format(.zero - huge) == "-18446744073709551614s")
        #expect(DurationText.format(.seconds(90)) == "90s")
        #expect(DurationText.format(.milliseconds(1500)) == "1.5s")
    }
}

