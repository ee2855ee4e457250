import Foundation
import Testing

/// The README introduces and the guides under docs/ hold the rest: a new user reaches the two
/// commands, the install and a real sample within a minute's read, every link between the
/// documents leads somewhere, and nothing cites a document that is not in the repository.
@Suite struct DocumentationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    static func read(_ file: String) throws -> String {
        try String(contentsOfFile: root + "/" + file, encoding: .utf8)
    }

    /// README.md and every Markdown file under docs/.
    static func documents() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root + "/docs").filter { $0.hasSuffix(".md") }
        return ["README.md"] + docs.sorted().map { "docs/" + $0 }
    }

    @Test func theReadmeIsAnIntroductionThatOpensWithTheTwoCommands() throws {
        let lines = try Self.read("README.md").split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count <= 200, "README.md has \(lines.count) lines")
        let opening = lines.prefix(20).joined(separator: "\n")
        #expect(opening.contains("scripts/run ") && opening.contains("scripts/test "), "\(opening)")
        // CI runs exactly the README's test command.
        #expect(try Self.read(".ci/run").contains("exec scripts/test"))
        let first60 = lines.prefix(60)
        #expect(first60.contains("## Install"), "no install section in the first 60 lines")
        #expect(first60.contains { $0.hasPrefix("apt install ./build/reachd_") }, "no package install in the first 60 lines")
        // A sample session: a command and what it printed.
        #expect(first60.contains("```console") && first60.contains("$ reachctl"), "no sample output in the first 60 lines")
    }

    /// Every relative link of README.md and docs/*.md names a file of the repository.
    @Test func relativeLinksLeadToFilesOfTheRepository() throws {
        let link = try NSRegularExpression(pattern: #"\]\(([^)#]+)(#[^)]*)?\)"#)
        for document in try Self.documents() {
            let text = try Self.read(document)
            let directory = (document as NSString).deletingLastPathComponent
            for match in link.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let target = (text as NSString).substring(with: match.range(at: 1))
                guard !target.contains("://") else { continue }
                let path = Self.root + "/" + (directory.isEmpty ? "" : directory + "/") + target
                #expect(FileManager.default.fileExists(atPath: path), "\(document) links to \(target), which does not exist")
            }
        }
    }

    /// Statements found false or pointing outside the repository stay gone.
    @Test func noDocumentCitesWhatIsNotHere() throws {
        for document in try Self.documents() {
            let text = try Self.read(document)
            // Every Markdown document named, linked or not, is one of the repository's own.
            let named = try NSRegularExpression(pattern: #"[A-Za-z0-9_./-]*[A-Za-z0-9_]\.md\b"#)
            let directory = (document as NSString).deletingLastPathComponent
            for match in named.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let name = (text as NSString).substring(with: match.range)
                let places = [directory, "", "docs"].map { Self.root + "/" + ($0.isEmpty ? "" : $0 + "/") + name }
                #expect(places.contains { FileManager.default.fileExists(atPath: $0) }, "\(document) cites \(name), which is not in the repository")
            }
            #expect(!text.contains("not computed yet"), "\(document) says something is not computed yet")
            #expect(text.range(of: #"\bissue \d+"#, options: .regularExpression) == nil, "\(document) cites an issue number")
        }
    }

    /// The LICENSE beside the README is the licence the Debian package declares.
    @Test func theLicenseIsTheOneTheDebianPackageDeclares() throws {
        let license = try Self.read("LICENSE")
        let copyright = try Self.read("packaging/debian/copyright")
        #expect(copyright.contains("Files: *\nCopyright: 2026 reachd maintainers\nLicense: Expat"))
        #expect(license.contains("Copyright (c) 2026 reachd maintainers"))
        // The Expat text, word for word (debian/copyright indents it and writes blank lines as " .").
        let words = { (text: String) in text.split(whereSeparator: { $0.isWhitespace || $0 == "." }).joined(separator: " ") }
        #expect(words(license).contains(words("Permission is hereby granted, free of charge, to any person obtaining a copy")))
        #expect(words(license).contains(words("IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE")))
    }
}
