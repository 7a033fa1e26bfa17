"""How a write that hit a quota or a full disk is worded (quota.py); the HDFS space quota on a
real cluster is in tests/yarn/test_yarn_quota.py."""

import errno

from tony_jupyter.core import quota


def test_a_full_disk_names_the_path_and_the_fix():
    msg = quota.worded("/home/u/.tony-jupyter/jobs/j/history.json", OSError(errno.ENOSPC, "x"))
    assert msg and "/home/u/.tony-jupyter/jobs/j/history.json" in msg
    assert "No space left" in msg and "TONY_JUPYTER_HOME" in msg


def test_an_hdfs_name_quota_names_the_directory_the_count_and_the_fix():
    err = RuntimeError(
        "NSQuotaExceededException: The NameSpace quota (directories and files) of directory "
        "/user/u/ckpt is exceeded: quota=4 file count=5"
    )
    msg = quota.worded("/user/u/ckpt/a", err)
    assert msg and "name quota of /user/u/ckpt" in msg and "quota 4" in msg
    assert "hdfs dfsadmin -setQuota <count> /user/u/ckpt" in msg


def test_other_errors_are_not_quotas():
    assert quota.worded("/x", OSError(errno.EACCES, "denied")) is None
    assert quota.worded("/x", ValueError("nope")) is None
