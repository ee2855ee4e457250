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
