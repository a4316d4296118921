#!/usr/bin/env bash
# Make a Docker engine and the sandbox test image available; idempotent; run as root.
#
#   eval "$(bash .ci/setup-docker.sh)"     # exports DOCKER_HOST and JIANMU_DOCKER_IMAGE
#
# 1. installs Debian's docker.io (and busybox-static for the image) when dockerd is missing;
# 2. uses an engine that already answers (DOCKER_HOST, else the default socket), or starts
#    dockerd itself: on the default socket when that is free, else on a socket of its own;
# 3. builds the test image without any registry: `docker import` of a root file system made of
#    busybox-static (the shell) and a slim copy of the Python installation behind $PYTHON (when
#    $PYTHON is a virtual environment's, the base installation it was made from, with the
#    environment's packages placed in that installation's site-packages) and jianmu-bt's
#    dependencies, so DockerSandbox tests run the same interpreter as the host;
# 4. prints `export ...` lines for the caller to eval, and writes them to $JIANMU_DOCKER_ENV_FILE
#    (default /tmp/jianmu-docker.env) so a later step can `source` them.
# Progress goes to stderr; only the export lines go to stdout.
set -euo pipefail

IMAGE="${JIANMU_DOCKER_IMAGE:-jianmu-sandbox-python:test}"
ENV_FILE="${JIANMU_DOCKER_ENV_FILE:-/tmp/jianmu-docker.env}"
OWN_DIR=/run/jianmu-docker
OWN_SOCK="unix://$OWN_DIR/docker.sock"
PYTHON="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { echo "setup-docker: $*" >&2; }

answers() { timeout 10 docker -H "$1" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

install_packages() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  fi
}

start_dockerd() {  # $1 = host url; extra args follow
  local host="$1"; shift
  mkdir -p "$OWN_DIR"
  log "starting dockerd on $host"
  nohup dockerd --host "$host" "$@" >"$OWN_DIR/dockerd.log" 2>&1 &
  for _ in $(seq 1 60); do
    if answers "$host"; then return 0; fi
    sleep 1
  done
  log "dockerd did not answer on $host; its log ends with:"; tail -n 20 "$OWN_DIR/dockerd.log" >&2
  return 1
}

find_engine() {
  if [ -n "${DOCKER_HOST:-}" ] && answers "$DOCKER_HOST"; then echo "$DOCKER_HOST"; return; fi
  if answers unix:///var/run/docker.sock; then echo unix:///var/run/docker.sock; return; fi
  if answers "$OWN_SOCK"; then echo "$OWN_SOCK"; return; fi
  if [ ! -e /var/run/docker.sock ] && ! pgrep -x dockerd >/dev/null; then
    if start_dockerd unix:///var/run/docker.sock >&2; then echo unix:///var/run/docker.sock; return; fi
  fi
  # The default socket is taken or unusable: a daemon of our own, with its own state.
  local own=(--data-root /var/lib/jianmu-docker --exec-root "$OWN_DIR/exec"
             --pidfile "$OWN_DIR/dockerd.pid")
  if start_dockerd "$OWN_SOCK" "${own[@]}" >&2; then echo "$OWN_SOCK"; return; fi
  log "retrying without iptables and the default bridge (containers use --network none)"
  pkill -F "$OWN_DIR/dockerd.pid" 2>/dev/null || true
  start_dockerd "$OWN_SOCK" "${own[@]}" --iptables=false --bridge=none >&2
  echo "$OWN_SOCK"
}

build_image() {  # $1 = host url
  local host="$1" wanted have root
  wanted="$("$PYTHON" - "$HERE" <<'EOF'
import hashlib, importlib.metadata as md, os, pathlib, sys
h = hashlib.sha256(sys.version.encode())
h.update(os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable).encode())
for d in sorted(md.distributions(), key=lambda d: d.metadata["Name"].lower()):
    h.update(f"{d.metadata['Name']}={d.version}".encode())
for f in sorted(pathlib.Path(sys.argv[1], "jianmu_bt").rglob("*.py")):
    h.update(f.read_bytes())
h.update(pathlib.Path(sys.argv[1], ".ci/setup-docker.sh").read_bytes())
print(h.hexdigest()[:16])
EOF
)"
  have="$(docker -H "$host" image inspect -f '{{index .Config.Labels "jianmu.hash"}}' "$IMAGE" 2>/dev/null || true)"
  if [ "$have" = "$wanted" ]; then log "image $IMAGE is up to date"; return; fi
  root="$(mktemp -d /tmp/jianmu-rootfs.XXXXXX)"
  ROOTFS="$root"
  trap 'rm -rf "${ROOTFS:-}"' EXIT
  log "building $IMAGE in $root"
  "$PYTHON" - "$root" "$HERE" <<'ROOTFS'
"""A root fs: busybox, the real Python installation behind this interpreter (stdlib without
tests), jianmu-bt and its dependencies, and the shared libraries they need.

Works from any Python, a virtual environment included: a venv's python is only a link plus a
pyvenv.cfg, so the image gets the base installation it was made from (sys._base_executable,
sys.base_prefix, asked for its own paths), and every dependency file, wherever it is installed
here (the venv, the user site, the base), goes to that installation's own site-packages.
`--plan PROJECT` prints what would be used, as JSON, and builds nothing.
"""
import importlib, importlib.metadata as md, json, os, pkgutil, re, shutil, site, subprocess, sys
import sysconfig
from pathlib import Path

PROBE = (
    "import json, sys, sysconfig; print(json.dumps({'prefix': sys.prefix, 'version': sys.version,"
    " 'in_venv': sys.prefix != sys.base_prefix, 'path': sys.path,"
    " 'stdlib': sysconfig.get_path('stdlib'), 'platstdlib': sysconfig.get_path('platstdlib'),"
    " 'purelib': sysconfig.get_path('purelib'), 'libdir': sysconfig.get_config_var('LIBDIR')}))"
)


def base_interpreter():
    """The real interpreter behind sys.executable and what it says about itself."""
    prefix = os.path.realpath(sys.base_prefix)
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    names = (f"python{version}", f"python{sys.version_info[0]}", "python")
    candidates = [getattr(sys, "_base_executable", None)]
    candidates += [os.path.join(prefix, "bin", name) for name in names]
    if sys.prefix == sys.base_prefix:
        candidates.insert(0, sys.executable)
    for candidate in candidates:
        if not candidate or not os.path.isfile(candidate):
            continue
        exe = os.path.realpath(candidate)
        done = subprocess.run([exe, "-I", "-c", PROBE], capture_output=True, text=True)
        if done.returncode != 0:
            continue
        info = json.loads(done.stdout)
        if info["version"] == sys.version and not info["in_venv"]:
            info["executable"] = exe
            if info["purelib"] not in info["path"]:  # use a site directory it really reads
                sites = [p for p in info["path"] if p.endswith(("-packages", "-packages/"))]
                info["purelib"] = sites[0] if sites else info["purelib"]
            return info
    sys.exit(f"setup-docker: cannot find the base interpreter of {sys.executable} under {prefix}")


def site_dirs():
    """This interpreter's site-packages directories (venv, user site, base), longest first."""
    dirs = set(site.getsitepackages()) | {site.getusersitepackages()}
    dirs |= {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    return sorted({os.path.realpath(d) for d in dirs if d}, key=len, reverse=True)


def requires(name, seen):
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in seen:
        return
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        return
    seen[key] = dist
    for req in dist.requires or []:
        if "extra ==" in req:
            continue
        requires(re.split(r"[ ;<>=!~\[(]", req, maxsplit=1)[0], seen)


def dependency_files(project):
    """(file here, path relative to site-packages) of jianmu-bt's runtime dependencies."""
    seen = {}
    requires("jianmu-bt", seen)
    # Plus whatever jianmu_bt's modules import today (the declared list may lag behind the code).
    sys.path.insert(0, str(project))
    try:
        import jianmu_bt
    except ImportError as exc:
        sys.exit(
            f"setup-docker: {sys.executable} cannot import jianmu_bt ({exc}); install the project "
            "into it (pip install -e .) or set PYTHON to an environment that has it"
        )

    for info in pkgutil.walk_packages(jianmu_bt.__path__, "jianmu_bt."):
        try:
            importlib.import_module(info.name)
        except Exception:
            pass
    owners = md.packages_distributions()
    for name in list(sys.modules):
        for dist_name in owners.get(name.split(".")[0], []):
            requires(dist_name, seen)
    sites = site_dirs()
    for key, dist in sorted(seen.items()):
        if key == "jianmu-bt":
            continue
        for f in dist.files or []:
            here = os.path.realpath(os.path.normpath(dist.locate_file(f)))
            home = next((d for d in sites if here.startswith(d + "/")), None)
            if home is not None and os.path.isfile(here):  # scripts in bin/ are not needed
                yield here, os.path.relpath(here, home)


if sys.argv[1] == "--plan":
    base = base_interpreter()
    files = dict((rel, here) for here, rel in dependency_files(Path(sys.argv[2])))
    print(json.dumps({**base, "files": files, "site_dirs": site_dirs()}))
    sys.exit(0)

root, project = Path(sys.argv[1]), Path(sys.argv[2])
base = base_interpreter()
exe = Path(base["executable"])


def put(src, dst=None):
    src = Path(src)
    dst = root / str(dst or src).lstrip("/")
    if dst.exists() or dst.is_symlink():
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_symlink() and dst == root / str(src).lstrip("/"):
        put(src.resolve())
        os.symlink(os.readlink(src), dst)
    elif src.is_dir():
        shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(*SKIP))
    elif src.exists():
        shutil.copy2(src, dst)


SKIP = ["site-packages", "dist-packages", "test", "tests", "idlelib", "tkinter", "turtledemo",
        "ensurepip", "lib2to3", "*.a"]
for d in ("usr/bin", "usr/local/bin", "etc", "tmp", "workspace", "proc", "sys", "dev"):
    (root / d).mkdir(parents=True, exist_ok=True)
for d in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):  # mirror merged /usr or not
    host = Path("/", d)
    if host.is_symlink():
        os.makedirs(root / os.readlink(host).lstrip("/"), exist_ok=True)
        os.symlink(os.readlink(host), root / d)
    elif host.is_dir():
        (root / d).mkdir()
shutil.copy2("/bin/busybox", root / "bin/busybox")
for applet in subprocess.run(["/bin/busybox", "--list"], capture_output=True, text=True).stdout.split():
    if not (root / "bin" / applet).exists():
        os.symlink("busybox", root / "bin" / applet)
(root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
(root / "etc/group").write_text("root:x:0:\nnogroup:x:65534:\n")

put(exe)
put(base["stdlib"])
put(base["platstdlib"])
libdir = base["libdir"] or ""
libpython = list(Path(libdir).glob("libpython3*.so*")) if libdir else []
for lib in libpython:
    put(lib)
purelib = base["purelib"]
for here, rel in dependency_files(project):
    put(here, os.path.join(purelib, rel))
shutil.copytree(project / "jianmu_bt", root / purelib.lstrip("/") / "jianmu_bt",
                ignore=shutil.ignore_patterns("__pycache__", ".env*", "*.pem", "*.key"))

# Shared libraries every binary and extension needs (as ldd resolves them here).
dynload = Path(base["platstdlib"], "lib-dynload")
objects = [exe, *dynload.glob("*.so"), *libpython]
objects += [p for p in (root / purelib.lstrip("/")).rglob("*.so")]
libs = set()
for obj in objects:
    out = subprocess.run(["ldd", str(obj)], capture_output=True, text=True).stdout
    libs.update(re.findall(r"(/\S+\.so[^\s]*)", out))
for lib in libs:
    put(lib)
    put(os.path.realpath(lib))
for name in ("python3", "python"):
    os.symlink(exe, root / "usr/local/bin" / name)
# The sandbox user must be able to walk down to the interpreter (e.g. through /root).
p = root
for part in Path(os.path.realpath(base["prefix"])).relative_to("/").parts:
    p = p / part
    p.mkdir(exist_ok=True)
    os.chmod(p, 0o755)
ROOTFS
  tar -C "$root" -c . | docker -H "$host" import \
      --change "LABEL jianmu.hash=$wanted" \
      --change "ENV PATH=/usr/local/bin:/usr/bin:/bin" \
      - "$IMAGE" >&2
  log "built $IMAGE ($(docker -H "$host" image inspect -f '{{.Size}}' "$IMAGE") bytes)"
}

install_packages
HOST="$(find_engine)"
log "engine: $HOST ($(docker -H "$HOST" version --format '{{.Server.Version}}'))"
build_image "$HOST"
{
  echo "export DOCKER_HOST=$HOST"
  echo "export JIANMU_DOCKER_IMAGE=$IMAGE"
} | tee "$ENV_FILE"
