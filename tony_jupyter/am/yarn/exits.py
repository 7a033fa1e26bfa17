"""How YARN says a container or an application ended, in the words the AM reports."""

# ContainerExitStatus values, worded for the job's failure reason.
EXIT_WORDS = {
    -100: "its container was aborted (released, or its node was lost)",
    -101: "its node's disks failed",
    -102: "preempted by YARN",
    -103: "killed by YARN for exceeding its virtual memory",
    -104: "killed by YARN for exceeding its memory; raise tony.<type>.memory / --memory",
    -105: "stopped by the AM",
    -106: "killed by the ResourceManager",
    -107: "killed after the application ended",
}
FINAL = {"SUCCEEDED": "SUCCEEDED", "FAILED": "FAILED", "KILLED": "KILLED"}
