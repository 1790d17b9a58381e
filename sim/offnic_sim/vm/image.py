"""The VM pieces the co-verification runs on (issue 19), built from Debian's archive only
(pins.toml [vm]), cached under build/vm/:

- `root/`: a Debian 13 root made by mmdebstrap with QEMU from trixie-backports (11.1: the
  first Debian QEMU with the vfio-user-pci client; it needs Debian 13's libc, so it runs
  by chroot, ../shared/TOOLCHAIN.md);
- `vmlinuz`: the guest kernel, Debian 12's linux-image (the kernel the headers offnic.ko
  builds against belong to);
- `initramfs.cpio`: busybox-static, offnic.ko and offnic-ctl (sw-driver/ctl, static);
  the guest's script is a second archive the kernel unpacks over it (`script_cpio`), so one base image serves every test.

Each piece is rebuilt only when its pins change (a stamp beside it records them).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from offnic_sim.harness import hw

VM = hw.ROOT / "build" / "vm"
RUN_IN_ROOT = "/offnic"   # where the guest's files and the device socket appear inside the chroot


def pins() -> dict:
    return tomllib.loads((hw.ROOT / "pins.toml").read_text())["vm"]


@dataclass(frozen=True)
class Images:
    root: Path        # the Debian 13 root with QEMU
    kernel: Path      # inside root (so the chrooted QEMU reads it)
    initramfs: Path   # inside root
    module: Path      # offnic.ko that the initramfs carries

    def in_root(self, p: Path) -> str:
        """`p` (under root) as the chrooted QEMU sees it."""
        return "/" + str(p.relative_to(self.root))


def _stamp_ok(path: Path, want: dict) -> bool:
    s = path.with_name(path.name + ".stamp")
    return path.exists() and s.exists() and json.loads(s.read_text()) == json.loads(json.dumps(want))


def _stamp(path: Path, want: dict) -> None:
    path.with_name(path.name + ".stamp").write_text(json.dumps(want))


def _log(msg: str) -> None:
    print(f"[offnic] vm: {msg}", flush=True)


def host_tools() -> None:
    """mmdebstrap, busybox-static, cpio from the host's Debian (apt), at their pins."""
    p = pins()
    want = {name: ver for name, ver in p["host_packages"].items()}
    missing = []
    for name, ver in want.items():
        q = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", name], capture_output=True, text=True)
        if q.returncode != 0 or q.stdout != ver:
            missing.append(f"{name}={ver}")
    if missing:
        _log(f"apt-get install {' '.join(missing)}")
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--allow-downgrades", *missing], check=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def build_root(p: dict) -> Path:
    root = VM / "root"
    want = {"suite": p["root_suite"], "qemu": p["qemu"], "mirror": p["mirror"]}
    if _stamp_ok(root, want):
        return root
    tmp = VM / "root.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    _log(f"mmdebstrap {p['root_suite']} with qemu-system-x86 {p['qemu']} (about a minute)")
    suite = p["root_suite"]
    subprocess.run(["mmdebstrap", "--variant=apt", f"--include=qemu-system-x86={p['qemu']}",
                    f"--aptopt=APT::Default-Release \"{suite}-backports\"", suite, str(tmp),
                    f"deb {p['mirror']} {suite} main", f"deb {p['mirror']} {suite}-backports main"], check=True)
    tmp.rename(root)
    _stamp(root, want)
    return root


def check_kernel_matches_headers(p: dict) -> None:
    """The guest kernel must be the one whose headers offnic.ko is built against (else the
    module's vermagic is refused): say so plainly when Debian's headers have moved on."""
    from offnic_sim.harness import kdriver
    release = kdriver.kernel_dir().name.removeprefix("linux-headers-")
    if p["kernel_package"] != f"linux-image-{release}":
        raise RuntimeError(f"offnic.ko builds against the {release} headers but pins.toml [vm] names "
                           f"{p['kernel_package']}: pin linux-image-{release} (and its version) instead")


def extract_kernel(p: dict, dest: Path) -> Path:
    check_kernel_matches_headers(p)
    want = {"package": p["kernel_package"], "version": p["kernel_version"]}
    if _stamp_ok(dest, want):
        return dest
    dl = VM / "dl"
    shutil.rmtree(dl, ignore_errors=True)
    dl.mkdir(parents=True)
    _log(f"apt-get download {p['kernel_package']}={p['kernel_version']}")
    subprocess.run(["apt-get", "download", f"{p['kernel_package']}={p['kernel_version']}"], cwd=dl, check=True,
                   capture_output=True)
    deb = next(dl.glob("*.deb"))
    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], check=True, capture_output=True).stdout
    release = p["kernel_package"].removeprefix("linux-image-")
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        data = t.extractfile(f"./boot/vmlinuz-{release}").read()
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    shutil.rmtree(dl)
    _stamp(dest, want)
    return dest


# The guest's /init: mounts, then runs /script.sh (the test's), prints its exit status
# between markers the host reads from the serial console, and powers off.
INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /tmp /run
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "offnic-vm: up $(uname -r)"
if [ -x /script.sh ]; then
  /script.sh
  echo "offnic-vm: script exit $?"
else
  echo "offnic-vm: no /script.sh: a shell"; setsid cttyhack sh
fi
sync
poweroff -f
"""


def _newc(entries: list[tuple[str, int, bytes]]) -> bytes:
    """A cpio 'newc' archive of (path, mode, data) entries (directories: mode 0o40755)."""
    out = bytearray()
    for ino, (name, mode, data) in enumerate([*entries, ("TRAILER!!!", 0, b"")], start=1):
        nm = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08X}" for v in (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nm), 0))
        out += hdr.encode() + nm
        out += b"\0" * (-len(out) % 4)
        out += data
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


# Files the guest needs beyond busybox, from Debian 12's packages (pins.toml [vm]
# guest_packages): ethtool, devlink and the libraries they link. (package, path in it, path in the guest)
GUEST_FILES = [
    ("ethtool", "sbin/ethtool", "sbin/ethtool"),
    ("iproute2", "sbin/devlink", "sbin/devlink"),
    ("libmnl0", "usr/lib/x86_64-linux-gnu/libmnl.so.0", "lib/x86_64-linux-gnu/libmnl.so.0"),
    ("libcap2", "lib/x86_64-linux-gnu/libcap.so.2", "lib/x86_64-linux-gnu/libcap.so.2"),
    ("libc6", "lib/x86_64-linux-gnu/libc.so.6", "lib/x86_64-linux-gnu/libc.so.6"),
    ("libc6", "lib/x86_64-linux-gnu/libm.so.6", "lib/x86_64-linux-gnu/libm.so.6"),
    ("libc6", "lib64/ld-linux-x86-64.so.2", "lib64/ld-linux-x86-64.so.2"),
]


def guest_files(p: dict) -> list[tuple[str, int, bytes]]:
    """GUEST_FILES' contents, from the pinned packages (apt-get download, dpkg-deb -x)."""
    dl = VM / "dl"
    shutil.rmtree(dl, ignore_errors=True)
    dl.mkdir(parents=True)
    out = []
    try:
        for pkg, ver in p["guest_packages"].items():
            _log(f"apt-get download {pkg}={ver}")
            subprocess.run(["apt-get", "download", f"{pkg}={ver}"], cwd=dl, check=True, capture_output=True)
            deb = next(dl.glob(f"{pkg}_*.deb"))
            tree = dl / pkg
            subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], check=True)
            for want_pkg, src, dst in GUEST_FILES:
                if want_pkg != pkg:
                    continue
                f = tree / src
                while f.is_symlink():   # resolve inside the package, not on this machine
                    t = os.readlink(f)
                    f = tree / t.lstrip("/") if t.startswith("/") else f.parent / t
                out.append((dst, 0o100755, f.read_bytes()))
    finally:
        shutil.rmtree(dl, ignore_errors=True)
    return out


def build_initramfs(p: dict, dest: Path, module: Path, ctl: Path) -> Path:
    busybox = Path("/bin/busybox")
    want = {"busybox": p["host_packages"]["busybox-static"], "guest": p["guest_packages"], "files": GUEST_FILES,
            "module": hashlib.sha256(module.read_bytes()).hexdigest(),
            "ctl": hashlib.sha256(ctl.read_bytes()).hexdigest(),
            "init": hashlib.sha256(INIT.encode()).hexdigest()}
    if _stamp_ok(dest, want):
        return dest
    entries = [(d, 0o40755, b"") for d in ("bin", "sbin", "proc", "sys", "dev", "tmp", "run", "lib",
                                           "lib/x86_64-linux-gnu", "lib64")]
    entries += guest_files(p)
    entries += [("bin/busybox", 0o100755, busybox.read_bytes()), ("init", 0o100755, INIT.encode()),
                ("lib/offnic.ko", 0o100644, module.read_bytes()), ("bin/offnic-ctl", 0o100755, ctl.read_bytes())]
    dest.write_bytes(_newc(entries))
    _stamp(dest, want)
    return dest


def script_cpio(script: str, extra: dict[str, bytes] | None = None) -> bytes:
    """A second initramfs archive: /script.sh (run by /init) and any extra files."""
    entries = [("script.sh", 0o100755, script.encode())]
    entries += [(name, 0o100644, data) for name, data in (extra or {}).items()]
    return _newc(entries)


def ensure(module: Path | None = None) -> Images:
    """Every piece, built now if missing or stale. `module`: offnic.ko (default: build it)."""
    from offnic_sim.harness import kdriver
    if module is None:
        if not kdriver.MODULE.exists():
            b = kdriver.build_module()
            if not b.ok:
                raise RuntimeError(f"offnic.ko did not build:\n{b.log[-2000:]}")
        module = kdriver.MODULE
    if not kdriver.CTL.exists():
        b = kdriver.build_ctl()
        if not b.ok:
            raise RuntimeError(f"offnic-ctl did not build:\n{b.log[-2000:]}")
    from filelock import FileLock
    p = pins()
    VM.mkdir(parents=True, exist_ok=True)
    with FileLock(str(VM) + ".lock"):   # tests in parallel workers share the pieces
        host_tools()
        root = build_root(p)
        guest = root / RUN_IN_ROOT.lstrip("/")
        guest.mkdir(exist_ok=True)
        kernel = extract_kernel(p, guest / "vmlinuz")
        initramfs = build_initramfs(p, guest / "initramfs.cpio", module, kdriver.CTL)
    return Images(root, kernel, initramfs, module)


def unavailable_reason() -> str | None:
    """Why the VM cannot run here, or None."""
    if os.geteuid() != 0:
        return "the VM runs QEMU by chroot and bridges TAP devices: needs root"
    if not shutil.which("apt-get"):
        return "no apt-get: the VM pieces come from Debian's archive"
    return None
