"""TonY's own configuration keys (its ``tony-default.xml``) that tony-jupyter accepts without
acting on them: each with the reason, which the user reads once (see ``options.py``). A TonY user's
``tony.xml`` therefore loads as it is; a key that is neither honoured (``spec.py``) nor listed
here is still an error, with a did-you-mean."""

from __future__ import annotations

_PORTAL = "a TonY Portal (history server) setting; tony-jupyter has no portal"
_CONF_PATH = (
    "tasks are given the cluster's addresses in their environment; HADOOP_CONF_DIR is read on "
    "the notebook host"
)

NOT_APPLICABLE: dict[str, str] = {
    "tony.application.type": "jobs are YARN applications of type TONY-JUPYTER, which "
    "%tony list and the Jupyter server extension find them by",
    "tony.application.tags": "not passed to YARN by this version",
    "tony.application.enable-preprocess": "there is no preprocessing step: the cell or "
    "script runs in every task",
    "tony.application.num-client-rm-connect-retries": "the notebook host talks to the "
    "ResourceManager over REST, without Hadoop's IPC client",
    "tony.application.distributed-mode": "tasks always start together and get the cluster "
    "spec once all have registered (TonY's GANG mode)",
    "tony.task.am.jvm.opts": "the AM is a Python process (its YARN client's JVM takes "
    "TONY_AM_JVM_OPTS from the AM's environment)",
    "tony.task.executor.jvm.opts": "executors are Python processes: there is no JVM to tune",
    "tony.task.metrics-interval-ms": "a task's resource use is sampled with its heartbeat",
    "tony.task.gpu-metrics.enabled": "GPU metrics are not collected by this version",
    "tony.am.gpus": "the AM needs no GPU",
    "tony.worker.timeout": "use tony.application.timeout (--timeout) for the whole job",
    "tony.application.stop-on-failure-jobtypes": "a failed task of any type ends its attempt",
    # the same key as older TonY releases spell it
    "tony.application.stop.on.failure.jobtypes": "a failed task of any type ends its attempt",
    "tony.application.fail-on-worker-failure-enabled": "a failed worker always fails its "
    "attempt (and --max-attempts retries it)",
    "tony.docker.enabled": "tasks run in the job's Python environment (--pack-env), not in "
    "Docker containers",
    "tony.application.security.enabled": "secure mode follows the cluster's "
    "hadoop.security.authentication",
    "tony.application.hdfs-conf-path": _CONF_PATH,
    "tony.application.yarn-conf-path": _CONF_PATH,
    "tony.application.mapred-conf-path": _CONF_PATH,
    "tony.portal.url": _PORTAL,
    "tony.portal.cache.max-entries": _PORTAL,
    "tony.history.location": _PORTAL,
    "tony.history.intermediate": _PORTAL,
    "tony.history.finished": _PORTAL,
    "tony.history.mover-interval-ms": _PORTAL,
    "tony.history.retention-sec": _PORTAL,
    "tony.history.purger-interval-ms": _PORTAL,
    "tony.history.finished-dir-timezone": _PORTAL,
    "tony.keytab.user": _PORTAL,
    "tony.keytab.location": _PORTAL,
    "tony.https.port": _PORTAL,
    "tony.https.keystore.path": _PORTAL,
    "tony.https.keystore.type": _PORTAL,
    "tony.https.keystore.password": _PORTAL,
    "tony.https.keystore.algorithm": _PORTAL,
    "tony.http.port": _PORTAL,
    "tony.secret.key": _PORTAL,
    "tony.application.test.horovod-driver-fail-enable": "a test switch of TonY's Horovod "
    "driver; Horovod is not supported",
    "tony.application.test.horovod-test-mode-enable": "a test switch of TonY's Horovod "
    "driver; Horovod is not supported",
}

# Values of a not-applicable key that ask for nothing tony-jupyter would do differently: no notice.
HARMLESS: dict[str, tuple[str, ...]] = {
    "tony.application.distributed-mode": ("gang",),
    "tony.docker.enabled": ("false",),
    "tony.application.security.enabled": ("true", "false"),
    "tony.application.fail-on-worker-failure-enabled": ("true",),
    "tony.application.stop-on-failure-jobtypes": ("ps", ""),
    "tony.application.stop.on.failure.jobtypes": ("ps", ""),
    "tony.application.type": ("tony", ""),
}
