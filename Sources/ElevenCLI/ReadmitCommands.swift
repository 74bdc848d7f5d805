import CLISupport
import ClientCore
import SpaceModel

// `eleven invite --short --readmit MEMBER`: the re-invite floor of account recovery. The person
// who lost every device joins with the code under a new identity, which replaces MEMBER's keys
// (a signed "member re-keyed" event; every thread key is wrapped to the new keys).

let readmitOption = OptionSpec(
    "readmit", value: "MEMBER",
    help: "let someone who lost every device back in as MEMBER, with a new identity (with --short)")

/// The member `--readmit` names, or nil without it. Refused without `--short`, with `--detach`,
/// or with more than one use.
func readmitTarget(_ arguments: ParsedArguments, session: SpaceSession) throws -> MemberID? {
    guard let wanted = arguments.value("readmit") else { return nil }
    guard !arguments.flag("detach"), (try arguments.int("uses", in: 1...100) ?? 1) == 1 else {
        throw CLIError.usage("--readmit lets one person in, now: leave out --detach and --uses", help: nil)
    }
    let roster = try withSpaceErrors { try session.roster() }
    guard let member = SpaceSession.findMember(wanted, in: roster) else {
        throw CLIError(
            code: .unknownMember,
            message: "\(session.saved.shownName) has no member \"\(wanted)\". See `eleven members`.",
            status: .usage)
    }
    guard member.id != session.saved.member else {
        throw CLIError.usage("you cannot re-admit yourself", help: nil)
    }
    return member.id
}
