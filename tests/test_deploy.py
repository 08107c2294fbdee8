"""deploy/: what can be checked of the systemd unit, the configuration files, the
container image and the Kubernetes manifests without systemd as init, a container
engine or a cluster.

- the example config has every option of `tandemd --help`, each at its default
  (but data-dir, listen and metrics-listen, set for the unit), and tandemd starts
  with it; so do the container's config and the Kubernetes ConfigMap's
- the unit passes `systemd-analyze verify` (when systemd-analyze is installed) and
  says Type=notify
- the manifests parse, refer to each other by the right names, request a GPU, and
  probe /healthz and /readyz on the port the config serves them on
- the Dockerfile copies files that exist, exposes those ports and checks /healthz

TANDEMD_BIN (set by CTest) is the tandemd of this build."""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPLOY = os.path.join(ROOT, "deploy")
K8S = os.path.join(DEPLOY, "k8s")
TANDEMD = os.environ.get("TANDEMD_BIN", os.path.join(ROOT, "build", "daemon", "tandemd"))

# Set for the systemd unit's paths and to turn the endpoint on; everything else is the default.
NOT_DEFAULT = {"listen", "data-dir", "metrics-listen"}


def help_options():
    """{name: default text or None} from tandemd --help."""
    out = subprocess.run([TANDEMD, "--help"], capture_output=True, text=True, check=True).stdout
    opts = {}
    for line in out.splitlines():
        m = re.match(r"^  --([a-z0-9-]+) \S+(?:   \(default: (.*?)\))?", line)
        if m:
            opts[m.group(1)] = m.group(2)
    opts.pop("config")
    return opts


def as_flag_text(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, str) and v == "":
        return '""'
    return str(v)


def test_example_config_has_every_option_at_its_default():
    opts = help_options()
    with open(os.path.join(DEPLOY, "tandemd.example.json")) as f:
        cfg = json.load(f)
    missing = sorted(set(opts) - set(cfg))
    unknown = sorted(set(cfg) - set(opts))
    assert not missing, f"deploy/tandemd.example.json lacks options: {missing}"
    assert not unknown, f"deploy/tandemd.example.json has options tandemd does not know: {unknown}"
    for name, default in opts.items():
        if name in NOT_DEFAULT or default is None:
            continue
        assert as_flag_text(cfg[name]) == default, f"{name}: {cfg[name]!r} in the example, default {default}"


def configmap_config():
    with open(os.path.join(K8S, "configmap.yaml")) as f:
        cm = yaml.safe_load(f)
    return json.loads(cm["data"]["tandemd.json"])


def start_with(cfg, extra=()):
    """Starts tandemd on cfg (a dict) with the paths and addresses of a scratch folder;
    returns once /readyz would say ready (the log's ' ready' line), then stops it.
    Returns the log."""
    tmp = tempfile.mkdtemp(prefix="tandem-deploy-")
    try:
        path = os.path.join(tmp, "tandemd.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write("a-token-of-more-than-22-characters\n")
        log_path = os.path.join(tmp, "log")
        args = [TANDEMD, "--config", path, "--data-dir", os.path.join(tmp, "data"), "--listen", "127.0.0.1:0",
                "--metrics-listen", "127.0.0.1:0", "--auth-token-file", token, "--threads", "2",
                "--engine-calibrate", "0", "--gpu-memory", "1G", *extra]
        with open(log_path, "w") as log:
            p = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with open(log_path) as f:
                    text = f.read()
                if " ready\n" in text or p.poll() is not None:
                    break
                time.sleep(0.02)
            assert p.poll() is None and " ready\n" in text, f"tandemd did not start with {cfg}:\n{text}"
        finally:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            status = p.wait(30)
        with open(log_path) as f:
            text = f.read()
        assert status == 0, f"exit status {status}:\n{text}"
        return text
    finally:
        shutil.rmtree(tmp)


def test_tandemd_starts_with_each_shipped_config():
    with open(os.path.join(DEPLOY, "tandemd.example.json")) as f:
        start_with(json.load(f))
    with open(os.path.join(DEPLOY, "tandemd.container.json")) as f:
        container = json.load(f)
    start_with(container)
    start_with(configmap_config())


def test_container_config_is_the_example_but_its_addresses():
    with open(os.path.join(DEPLOY, "tandemd.example.json")) as f:
        example = json.load(f)
    with open(os.path.join(DEPLOY, "tandemd.container.json")) as f:
        container = json.load(f)
    assert container["listen"] == ["0.0.0.0:7450"]
    assert container["metrics-listen"] == "0.0.0.0:7451"
    assert container["data-dir"] == "/var/lib/tandem"
    assert {k: v for k, v in container.items() if k not in ("listen", "metrics-listen")} == {
        k: v for k, v in example.items() if k not in ("listen", "metrics-listen")}


def test_systemd_unit():
    path = os.path.join(DEPLOY, "tandemd.service")
    with open(path) as f:
        unit = f.read()
    for line in ("Type=notify", "NotifyAccess=main", "ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
                 "DynamicUser=yes", "StateDirectory=tandem", "DeviceAllow=char-nvidia-frontend rw",
                 "ExecStart=/usr/local/bin/tandemd --config /etc/tandem/tandemd.json", "Restart=on-failure"):
        assert re.search("^" + re.escape(line) + "$", unit, re.M), f"tandemd.service lacks {line}"
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed: the unit's syntax is not verified")
    tmp = tempfile.mkdtemp(prefix="tandem-unit-")
    try:
        # verify checks that ExecStart's program exists: this build's tandemd stands in
        copy = os.path.join(tmp, "tandemd.service")
        with open(copy, "w") as f:
            f.write(unit.replace("/usr/local/bin/tandemd", os.path.abspath(TANDEMD)))
        r = subprocess.run(["systemd-analyze", "verify", copy], capture_output=True, text=True)
        assert r.returncode == 0 and not r.stderr.strip(), f"systemd-analyze verify:\n{r.stdout}{r.stderr}"
    finally:
        shutil.rmtree(tmp)


def load_k8s():
    docs = {}
    for name in sorted(os.listdir(K8S)):
        if not name.endswith(".yaml"):
            continue
        with open(os.path.join(K8S, name)) as f:
            for d in yaml.safe_load_all(f):
                if not d:
                    continue
                assert "apiVersion" in d and "kind" in d, f"{name}: a document without apiVersion or kind"
                docs[(d["kind"], d.get("metadata", {}).get("name"))] = (name, d)
    return docs


def test_k8s_manifests_fit_together():
    docs = load_k8s()
    _, kust = docs[("Kustomization", None)]
    for r in kust["resources"]:
        assert os.path.exists(os.path.join(K8S, r)), f"kustomization.yaml lists {r}, which does not exist"
    assert "secret.example.yaml" not in kust["resources"], "the placeholder token must not be applied"

    _, dep = docs[("Deployment", "tandemd-gpu-0")]
    assert dep["spec"]["strategy"]["type"] == "Recreate"
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 1
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    cfg = configmap_config()
    assert ports["metrics"] == int(cfg["metrics-listen"].rsplit(":", 1)[1])
    assert ports["tandem"] == int(cfg["listen"][0].rsplit(":", 1)[1])
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["terminationGracePeriodSeconds"] > cfg["shutdown-timeout"]

    vols = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts["data"] == cfg["data-dir"]
    assert ("PersistentVolumeClaim", vols["data"]["persistentVolumeClaim"]["claimName"]) in docs
    assert ("ConfigMap", vols["config"]["configMap"]["name"]) in docs
    assert ("Secret", vols["auth"]["secret"]["secretName"]) in docs
    token_file = c["args"][c["args"].index("--auth-token-file") + 1]
    assert token_file.startswith(mounts["auth"] + "/")
    assert token_file.rsplit("/", 1)[1] in docs[("Secret", "tandemd-auth")][1]["stringData"]

    labels = dep["spec"]["template"]["metadata"]["labels"]
    for name in ("tandemd-gpu-0", "tandemd"):
        _, svc = docs[("Service", name)]
        assert all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()), f"Service {name} selects no pod"
        assert {p["targetPort"] for p in svc["spec"]["ports"]} <= set(ports)
    assert docs[("Service", "tandemd")][1]["spec"]["clusterIP"] == "None"


def test_dockerfile():
    with open(os.path.join(DEPLOY, "Dockerfile")) as f:
        text = f.read()
    for m in re.finditer(r"^COPY (?!--from)(\S+) ", text, re.M):
        src = m.group(1)
        assert src == "." or os.path.exists(os.path.join(ROOT, src)), f"Dockerfile copies {src}, which does not exist"
    assert re.search(r"^FROM nvidia/cuda:\$\{CUDA_VERSION\}-runtime-", text, re.M)
    assert re.search(r"^USER tandem:tandem$", text, re.M)
    assert re.search(r"^EXPOSE 7450 7451$", text, re.M)
    assert "http://127.0.0.1:7451/healthz" in text
    with open(os.path.join(DEPLOY, "tandemd.container.json")) as f:
        container = json.load(f)
    assert container["metrics-listen"].endswith(":7451")
