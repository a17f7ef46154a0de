"""The verification container's system-call boundary under strict mode.

The tests and the deliverable they run share a container; what separates them must be the
kernel, not the checker's vigilance. This profile refuses the calls by which one process
reaches into another (ptrace, process_vm_readv/writev, pidfd_getfd, kcmp), the ones that
change what a path or a namespace means (mount, unshare, setns, user namespaces through clone),
and kernel facilities a test never needs (keyrings, BPF, perf, module loading, io_uring, whose
operations no seccomp filter sees). Everything else is allowed: the engine's default profile
is replaced, and the capabilities the container lacks already make the rest of that profile's
refusals moot.
"""

from __future__ import annotations

import errno
import json
from functools import cache

REFUSED = (
    # one process reaching into another
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "process_madvise",
    # what a path or a namespace means
    "mount", "umount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "open_by_handle_at", "name_to_handle_at",
    # kernel facilities no test needs
    "bpf", "perf_event_open", "userfaultfd", "add_key", "request_key", "keyctl", "init_module",
    "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
    "acct", "quotactl", "syslog", "iopl", "ioperm", "lookup_dcookie", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "fanotify_init",
)
CLONE_NEWUSER = 0x10000000


@cache
def strict_profile(allow_ptrace: bool = False) -> str:
    """The profile as the engine's `seccomp=` security option takes it (JSON text).
    `allow_ptrace` (a task's `[verifier] allow_ptrace`) lets ptrace itself through for tests
    that trace their own children; the calls that read or write another process's memory
    without tracing it stay refused."""
    refused = [name for name in REFUSED if not (allow_ptrace and name == "ptrace")]
    arches = ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"]
    profile = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": arches,
        "syscalls": [
            {"names": refused, "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM},
            # clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc fall back
            # to clone, whose flags it can.
            {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS},
            {"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM,
             "args": [{"index": 0, "value": CLONE_NEWUSER, "valueTwo": CLONE_NEWUSER, "op": "SCMP_CMP_MASKED_EQ"}]},
        ],
    }
    return json.dumps(profile, separators=(",", ":"))


def security_options(allow_ptrace: bool = False) -> list[str]:
    """Strict mode's security options: the profile, and no privilege gained through exec
    (a setuid binary the deliverable planted stays unprivileged)."""
    return [f"seccomp={strict_profile(allow_ptrace)}", "no-new-privileges:true"]
