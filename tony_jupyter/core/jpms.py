"""The flags every JVM of Hadoop code needs on Java 17+: the AM's (JPype) and the devcluster's.

Public: the devcluster (tony_jupyter_devcluster) takes them from here, so the AM's own modules
stay private to it.
"""

from __future__ import annotations

# What Hadoop's launcher adds on Java 17+ (hadoop_finalize_jpms_opts, HADOOP-19310): without
# java.lang and friends Hadoop's reflection (Guice, UGI, protobuf) fails. Java 8/11 ignore them
# thanks to IgnoreUnrecognizedVMOptions.
JPMS_FLAGS: tuple[str, ...] = (
    "-XX:+IgnoreUnrecognizedVMOptions",
    "-Djava.net.preferIPv4Stack=true",
    "--enable-native-access=ALL-UNNAMED",
    *(
        f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
        for pkg in (
            "java.io",
            "java.lang",
            "java.lang.reflect",
            "java.math",
            "java.net",
            "java.text",
            "java.util",
            "java.util.concurrent",
            "java.util.zip",
            "sun.security.util",
            "sun.security.x509",
        )
    ),
)
