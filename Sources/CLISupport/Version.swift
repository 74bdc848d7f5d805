/// The version every Eleven program prints for `--version`. One constant for all of them: the
/// programs of one build are one release, and a bug report names it.
public enum ElevenVersion {
    public static let current = "0.11.0"
}
