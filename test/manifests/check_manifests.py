#!/usr/bin/env python3
"""Checks the invariants of runtimeclasses/ and deploy/: they render with `kubectl kustomize`, names
stay short under an operator's 20-character namePrefix, the DaemonSet mounts and privileges are the
intended ones, a config change rolls the DaemonSet, and the chain RuntimeClass handler -> containerd
runtime -> shim binary -> Kata configuration agrees in every file.

Python 3.11 standard library only. YAML is turned into JSON by kubectl itself
(`kubectl annotate --local -o json`), so PyYAML is not needed.

    check_manifests.py --repo /work/main [--group NAME] [--kubectl PATH]

Exit status 0 when every check of the selected groups passes, 1 otherwise (a missing kubectl is a
failure, never a skip).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

# ---- contracts (issue 5 and the plugin/shim issues) -------------------------------------------------
RUNTIMECLASS = "kata-qemu-vfio-gpu"
HANDLER = "vfio-gpu"
RUNTIME_TYPE = "io.containerd.vfio-gpu.v2"
SHIM_BINARY = "containerd-shim-vfio-gpu-v2"
KATA_DIR = "/opt/kata/share/defaults/kata-containers"
# `vfio-gpu install` copies Kata's GPU configurations into a directory of our own, whose config.d/
# holds our drop-in (Kata's shared config.d/ would also apply to configuration-clh.toml).
KATA_PRIVATE_DIR = f"{KATA_DIR}/vfio-gpu"
CONFIG_PATHS = {
    "vfio-gpu": f"{KATA_PRIVATE_DIR}/configuration-qemu-nvidia-gpu.toml",
    "vfio-gpu-snp": f"{KATA_PRIVATE_DIR}/configuration-qemu-nvidia-gpu-snp.toml",
    "vfio-gpu-tdx": f"{KATA_PRIVATE_DIR}/configuration-qemu-nvidia-gpu-tdx.toml",
}
RUNTIMECLASSES = {
    "kata-qemu-vfio-gpu": "vfio-gpu",
    "kata-qemu-vfio-gpu-snp": "vfio-gpu-snp",
    "kata-qemu-vfio-gpu-tdx": "vfio-gpu-tdx",
}
NODE_LABEL = ("vfio-gpu.io/hypervisor", "true")
NAMESPACE = "vfio-gpu-system"
POD_RESOURCES_SOCK = "/var/lib/kubelet/pod-resources/kubelet.sock"
METRICS_PORT = 9477
CONTAINERD_V2_CRI = "io.containerd.grpc.v1.cri"
CONTAINERD_V3_CRI = "io.containerd.cri.v1.runtime"  # containerd 2.x, config version 3
PLUGIN_KEYS = {
    "sysfs_root", "dev_root", "kubelet_dir", "cdi_dir", "run_dir", "metrics_address", "log_format",
    "vendors", "gpu_classes", "resource_naming", "resource_name", "nvswitch_resource_name", "allow",
    "deny", "cdi_aliases", "allocate_strategy", "kubevirt_env", "reconcile_interval_seconds",
}
SHIM_KEYS = {
    "downstream_shim", "sysfs_root", "dev_root", "run_dir", "pod_resources_socket", "resources",
    "authorize", "gpu_runtime_class", "kata_config_path", "runtime_switch_config",
    "annotation_policy", "kata_annotation_allowlist", "kata_pod_resources", "cdi_dirs",
    "pod_resources_timeout_ms", "pod_resources_client", "syslog",
}
# The annotation globs containerd may copy into specs: ours and Kata's, nothing else.
ALLOWED_ANNOTATION_GLOBS = {"io.katacontainers.*", "vfio-gpu.io/*"}
# Host paths the plugin container may mount (issue 5), and the one only the installer may.
PLUGIN_HOST_PATHS = {
    "/var/lib/kubelet/device-plugins", "/var/lib/kubelet/pod-resources", "/sys", "/dev/vfio",
    "/var/run/cdi", "/run/vfio-gpu",
}
READ_ONLY_HOST_PATHS = {"/var/lib/kubelet/pod-resources", "/sys", "/dev/vfio"}
PREFIX = "p1234567890123456789"  # an operator's namePrefix of 20 characters
NAME_LIMIT = 40
DEPLOY_VARIANTS = ["deploy/base", "deploy/overlays/per-model", "deploy/overlays/nfd",
                   "deploy/overlays/no-installer"]


class Checker:
    def __init__(self, repo, kubectl):
        self.repo = repo
        self.kubectl = kubectl
        self.failures = []
        self.passes = 0

    # ---- reporting ----
    def check(self, ok, what):
        if ok:
            self.passes += 1
        else:
            self.failures.append(what)
            print(f"FAIL: {what}")
        return ok

    def path(self, rel):
        return os.path.join(self.repo, rel)

    # ---- rendering ----
    def run_kubectl(self, args, stdin=None):
        proc = subprocess.run([self.kubectl, *args], input=stdin, capture_output=True, text=True,
                              env={**os.environ, "KUBECONFIG": os.devnull}, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args[:2])} failed: {proc.stderr.strip()}")
        return proc.stdout

    def to_objects(self, yaml_text):
        """YAML documents -> list of dicts, converted by kubectl without a cluster."""
        if not yaml_text.strip():
            return []
        out = self.run_kubectl(
            ["annotate", "--local", "-f", "-", "-o", "json", "vfio-gpu.io/none-"], yaml_text)
        objs, dec, pos = [], json.JSONDecoder(), 0
        while True:
            while pos < len(out) and out[pos].isspace():
                pos += 1
            if pos >= len(out):
                break
            obj, pos = dec.raw_decode(out, pos)
            objs.extend(obj.get("items", []) if obj.get("kind") == "List" else [obj])
        for obj in objs:  # annotate --local adds an empty map; drop it so "no annotations" reads so
            if obj.get("metadata", {}).get("annotations") == {}:
                del obj["metadata"]["annotations"]
        return objs

    def render(self, directory):
        return self.to_objects(self.run_kubectl(["kustomize", directory]))

    def render_with_prefix(self, rel, extra=""):
        with tempfile.TemporaryDirectory(prefix="vfio-gpu-manifests-") as tmp:
            with open(os.path.join(tmp, "kustomization.yaml"), "w") as f:
                f.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                        f"namePrefix: {PREFIX}\nresources:\n  - {os.path.relpath(self.path(rel), tmp)}\n"
                        + extra)
            return self.render(tmp)

    def load_toml(self, rel):
        with open(self.path(rel), "rb") as f:
            return tomllib.load(f)

    def load_json(self, rel):
        with open(self.path(rel)) as f:
            return json.load(f)


def find(objs, kind, name=None):
    return [o for o in objs if o.get("kind") == kind and (name is None or o["metadata"]["name"] == name)]


def pod_spec(ds):
    return ds["spec"]["template"]["spec"]


def all_containers(spec):
    return spec.get("initContainers", []) + spec.get("containers", [])


def containerd_binary(runtime_type):
    """containerd's rule: io.containerd.<name>.<version> -> containerd-shim-<name>-<version>."""
    parts = runtime_type.split(".")
    return f"containerd-shim-{parts[-2]}-{parts[-1]}" if len(parts) >= 4 else ""


def dig(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def plugin_config_of(objs):
    cms = find(objs, "ConfigMap")
    if len(cms) != 1 or "config.json" not in cms[0].get("data", {}):
        return None
    return json.loads(cms[0]["data"]["config.json"])


# ---- check groups -----------------------------------------------------------------------------------
def check_render(c):
    """Everything renders; the deploy/ entry point is the base."""
    for rel in ["deploy", *DEPLOY_VARIANTS, "runtimeclasses", "runtimeclasses/overlays/snp",
                "runtimeclasses/overlays/tdx"]:
        objs = c.render(c.path(rel))
        c.check(len(objs) > 0, f"{rel}: kubectl kustomize renders no objects")
    kinds = sorted(o["kind"] for o in c.render(c.path("deploy")))
    c.check(kinds == ["ConfigMap", "DaemonSet", "Namespace", "ServiceAccount"],
            f"deploy/ renders {kinds}, want ConfigMap, DaemonSet, Namespace, ServiceAccount")


def check_names(c):
    """Every name, ServiceAccount, container name, label value and socket name <= 40 characters
    when rendered with a 20-character namePrefix."""
    for rel in DEPLOY_VARIANTS:
        objs = c.render_with_prefix(rel)
        fields = []
        for o in objs:
            md = o["metadata"]
            fields.append((f"{o['kind']} name", md["name"]))
            if "namespace" in md:
                fields.append((f"{o['kind']} {md['name']} namespace", md["namespace"]))
            fields += [(f"{o['kind']} {md['name']} label {k}", v) for k, v in md.get("labels", {}).items()]
            if o["kind"] == "DaemonSet":
                spec = pod_spec(o)
                tmpl_labels = o["spec"]["template"]["metadata"].get("labels", {})
                sel = o["spec"]["selector"].get("matchLabels", {})
                fields += [(f"pod template label {k}", v) for k, v in tmpl_labels.items()]
                fields += [(f"selector label {k}", v) for k, v in sel.items()]
                fields.append(("serviceAccountName", spec.get("serviceAccountName", "")))
                fields += [(f"container name", ct["name"]) for ct in all_containers(spec)]
                fields += [(f"volume {v['name']} configMap", v["configMap"]["name"])
                           for v in spec.get("volumes", []) if "configMap" in v]
        cfg = plugin_config_of(objs) or {}
        # The plugin names one socket per resource: vfio-gpu-<resource, [^A-Za-z0-9.-] as _>.sock,
        # cut to 40 characters with a hash tail when longer (plugin/resource_server.cc, pinned for
        # any resource name by test/plugin/socket_name_test.cc). The shipped names must not need
        # the cut: the socket should read as its resource.
        for key in ("resource_name", "nvswitch_resource_name"):
            if cfg.get(key):
                sock = re.sub(r"[^A-Za-z0-9.-]", "_", cfg[key])
                fields.append((f"socket for {key}", f"vfio-gpu-{sock}.sock"))
        for what, value in fields:
            c.check(len(str(value)) <= NAME_LIMIT,
                    f"{rel} with namePrefix {PREFIX!r}: {what} {value!r} is {len(str(value))} "
                    f"characters, limit {NAME_LIMIT}")
        # The prefix must actually have been applied (otherwise the check above proves nothing).
        ds = find(objs, "DaemonSet")
        c.check(len(ds) == 1 and ds[0]["metadata"]["name"].startswith(PREFIX),
                f"{rel}: namePrefix not applied to the DaemonSet")
        if ds:
            c.check(pod_spec(ds[0]).get("serviceAccountName", "").startswith(PREFIX),
                    f"{rel}: DaemonSet's serviceAccountName does not follow the prefixed ServiceAccount")
    # RuntimeClasses are never prefixed (tenants name them) but obey the 40-character rule too.
    for rel in ["runtimeclasses", "runtimeclasses/overlays/snp", "runtimeclasses/overlays/tdx"]:
        for o in c.render(c.path(rel)):
            c.check(len(o["metadata"]["name"]) <= NAME_LIMIT,
                    f"{rel}: RuntimeClass name {o['metadata']['name']!r} over {NAME_LIMIT} characters")


def check_daemonset(c):
    """Mounts, privileges, probe, metrics, scheduling, resources, image, config consistency."""
    for rel in DEPLOY_VARIANTS:
        objs = c.render(c.path(rel))
        dss = find(objs, "DaemonSet")
        if not c.check(len(dss) == 1, f"{rel}: want exactly one DaemonSet, got {len(dss)}"):
            continue
        ds, spec = dss[0], pod_spec(dss[0])
        where = f"{rel} DaemonSet {ds['metadata']['name']}"
        c.check(ds["metadata"].get("namespace") == NAMESPACE, f"{where}: not in namespace {NAMESPACE}")
        c.check(len(find(objs, "Namespace", NAMESPACE)) == 1, f"{rel}: Namespace {NAMESPACE} missing")
        c.check(dig(ds, "spec", "updateStrategy", "type") == "RollingUpdate",
                f"{where}: updateStrategy is not RollingUpdate")
        c.check(spec.get("priorityClassName") == "system-node-critical",
                f"{where}: priorityClassName is not system-node-critical")
        c.check(bool(spec.get("tolerations")), f"{where}: no tolerations for tainted GPU nodes")
        node_sel = spec.get("nodeSelector", {})
        if rel.endswith("nfd"):
            c.check(any(k.startswith("feature.node.kubernetes.io/pci-") and k.endswith("10de.present")
                        for k in node_sel), f"{where}: nfd overlay does not select NFD's 10de label")
        else:
            c.check(node_sel.get(NODE_LABEL[0]) == NODE_LABEL[1],
                    f"{where}: nodeSelector {node_sel} lacks {NODE_LABEL[0]}={NODE_LABEL[1]!r}")
        c.check(spec.get("automountServiceAccountToken") is False,
                f"{where}: the ServiceAccount token is mounted, but the plugin never calls the API")
        sas = find(objs, "ServiceAccount")
        c.check(len(sas) == 1 and spec.get("serviceAccountName") == sas[0]["metadata"]["name"],
                f"{where}: serviceAccountName does not name the rendered ServiceAccount")

        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        host_path_of = {n: v["hostPath"]["path"] for n, v in volumes.items() if "hostPath" in v}
        mounted_by = {}
        for ct in all_containers(spec):
            for m in ct.get("volumeMounts", []):
                mounted_by.setdefault(m["name"], []).append((ct["name"], m))
        for n in volumes:
            c.check(n in mounted_by, f"{where}: volume {n} is declared but mounted by no container")

        # The long-running plugin container.
        plugin = [ct for ct in spec["containers"] if ct["name"] == "plugin"]
        if not c.check(len(plugin) == 1, f"{where}: no container named 'plugin'"):
            continue
        plugin = plugin[0]
        p_mounts = {m["name"]: m for m in plugin.get("volumeMounts", [])}
        p_host = {host_path_of[n]: m for n, m in p_mounts.items() if n in host_path_of}
        c.check(set(p_host) == PLUGIN_HOST_PATHS,
                f"{where}: plugin hostPath mounts {sorted(p_host)}, want exactly {sorted(PLUGIN_HOST_PATHS)}")
        for hp in READ_ONLY_HOST_PATHS & set(p_host):
            c.check(p_host[hp].get("readOnly") is True, f"{where}: plugin mounts {hp} read-write")
        sc = plugin.get("securityContext", {})
        c.check(not sc.get("privileged", False), f"{where}: plugin container is privileged")
        c.check(sc.get("allowPrivilegeEscalation") is False, f"{where}: plugin allows privilege escalation")
        c.check(sc.get("readOnlyRootFilesystem") is True, f"{where}: plugin root filesystem is writable")
        c.check(dig(sc, "capabilities", "drop") == ["ALL"] and not dig(sc, "capabilities", "add"),
                f"{where}: plugin does not drop ALL capabilities (or adds some)")
        probe = dig(plugin, "livenessProbe", "httpGet") or {}
        c.check(probe.get("path") == "/healthz" and probe.get("port") == METRICS_PORT,
                f"{where}: liveness probe is not GET /healthz on {METRICS_PORT}: {probe}")
        c.check(any(p.get("containerPort") == METRICS_PORT for p in plugin.get("ports", [])),
                f"{where}: metrics port {METRICS_PORT} not declared")
        ann = ds["spec"]["template"]["metadata"].get("annotations", {})
        c.check(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == str(METRICS_PORT),
                f"{where}: Prometheus scrape annotations missing or not on port {METRICS_PORT}")
        for ct in all_containers(spec):
            res = ct.get("resources", {})
            c.check(bool(res.get("requests")) and bool(res.get("limits")),
                    f"{where}: container {ct['name']} lacks resource requests or limits")
            c.check(re.search(r"/vfio-gpu:[^/]+$", ct.get("image", "")) is not None,
                    f"{where}: container {ct['name']} image {ct.get('image')!r} was not set by kustomize images:")

        # The installer init container: the only one with the host's root, clearly privileged.
        root_vols = [n for n, p in host_path_of.items() if p == "/"]
        inits = spec.get("initContainers", [])
        if rel.endswith("no-installer"):
            c.check(not inits and not root_vols, f"{where}: no-installer still has an init container or /")
        else:
            c.check(len(inits) == 1 and inits[0]["name"] == "install", f"{where}: no 'install' init container")
            if inits:
                cmd = inits[0].get("command", []) + inits[0].get("args", [])
                want = ["vfio-gpu", "install", "--host-root", "/host", "--bind-gpus", "--config",
                        "/etc/vfio-gpu/config.json"]
                c.check(cmd == want, f"{where}: installer runs {cmd}, want {' '.join(want)}")
                mounts = {m["name"]: m for m in inits[0].get("volumeMounts", [])}
                c.check(mounts.get("config", {}).get("mountPath") == "/etc/vfio-gpu"
                        and mounts["config"].get("readOnly") is True,
                        f"{where}: the installer needs the ConfigMap read-only at /etc/vfio-gpu for --bind-gpus")
                c.check(len(root_vols) == 1 and [ct for ct, m in mounted_by.get(root_vols[0], [])] == ["install"]
                        and mounted_by[root_vols[0]][0][1]["mountPath"] == "/host",
                        f"{where}: host root must be mounted at /host by the install container only")
        c.check(all(h in PLUGIN_HOST_PATHS or h == "/" for h in host_path_of.values()),
                f"{where}: unexpected hostPath volumes {sorted(host_path_of.values())}")

        # The hash-suffixed ConfigMap, referenced by the DaemonSet, holding a config consistent
        # with the mounts.
        cms = find(objs, "ConfigMap")
        if not c.check(len(cms) == 1, f"{rel}: want one ConfigMap, got {len(cms)}"):
            continue
        cm_name = cms[0]["metadata"]["name"]
        c.check(re.fullmatch(r"vfio-gpu-[a-z0-9]{10}", cm_name) is not None,
                f"{rel}: ConfigMap {cm_name!r} has no content-hash suffix (configMapGenerator)")
        cfg_vols = [n for n, v in volumes.items() if dig(v, "configMap", "name") == cm_name]
        c.check(len(cfg_vols) == 1, f"{where}: does not mount ConfigMap {cm_name}")
        cfg = plugin_config_of(objs)
        if not c.check(cfg is not None, f"{rel}: ConfigMap has no config.json"):
            continue
        c.check(set(cfg) <= PLUGIN_KEYS, f"{rel}: config.json has unknown keys {sorted(set(cfg) - PLUGIN_KEYS)}")
        args = plugin.get("args", [])
        cfg_mount = p_mounts.get(cfg_vols[0], {}).get("mountPath", "?") if cfg_vols else "?"
        c.check(args[:1] == ["--config"] and len(args) > 1 and args[1] == f"{cfg_mount}/config.json",
                f"{where}: plugin args {args} do not point --config at the mounted config.json")
        mount_paths = {m["mountPath"]: host_path_of.get(n) for n, m in p_mounts.items()}
        for key, host in [("kubelet_dir", "/var/lib/kubelet/device-plugins"), ("cdi_dir", "/var/run/cdi"),
                          ("run_dir", "/run/vfio-gpu"), ("sysfs_root", "/sys")]:
            c.check(mount_paths.get(cfg.get(key)) == host,
                    f"{rel}: config {key}={cfg.get(key)!r} is not where host {host} is mounted")
        c.check(mount_paths.get(cfg.get("dev_root", "") + "/vfio") == "/dev/vfio",
                f"{rel}: config dev_root={cfg.get('dev_root')!r} does not lead to the mounted /dev/vfio")
        c.check(cfg.get("metrics_address", "").rsplit(":", 1)[-1] == str(METRICS_PORT),
                f"{rel}: metrics_address {cfg.get('metrics_address')!r} is not port {METRICS_PORT}")
        c.check(cfg.get("resource_naming") in ("single", "per-model"), f"{rel}: bad resource_naming")
        c.check(cfg.get("allocate_strategy") in (None, "cdi", "cdi-annotations", "device-specs"),
                f"{rel}: bad allocate_strategy")


def check_rollout(c):
    """A change of the plugin configuration changes the pod template (rolls the DaemonSet)."""
    base = c.render_with_prefix("deploy/base")
    with tempfile.TemporaryDirectory(prefix="vfio-gpu-rollout-") as tmp:
        cfg = json.load(open(c.path("deploy/base/plugin-config.json")))
        cfg["reconcile_interval_seconds"] = cfg.get("reconcile_interval_seconds", 30) + 1
        with open(os.path.join(tmp, "plugin-config.json"), "w") as f:
            json.dump(cfg, f)
        with open(os.path.join(tmp, "kustomization.yaml"), "w") as f:
            f.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                    f"resources:\n  - {os.path.relpath(c.path('deploy/base'), tmp)}\n"
                    "configMapGenerator:\n  - name: vfio-gpu\n    behavior: replace\n"
                    "    files:\n      - config.json=plugin-config.json\n")
        changed = c.render(tmp)
    plain = c.render(c.path("deploy/base"))
    t_plain = find(plain, "DaemonSet")[0]["spec"]["template"]
    t_changed = find(changed, "DaemonSet")[0]["spec"]["template"]
    c.check(t_plain != t_changed, "changing config.json leaves the DaemonSet's pod template unchanged: "
            "a config change would not roll the plugin")
    again = c.render(c.path("deploy/base"))
    c.check(find(again, "DaemonSet")[0]["spec"]["template"] == t_plain,
            "rendering the same configuration twice gives different pod templates")
    # No hand-kept version string: nothing in the template's annotations but Prometheus'.
    ann = t_plain["metadata"].get("annotations", {})
    c.check(all(k.startswith("prometheus.io/") for k in ann),
            f"pod template carries annotations {sorted(ann)} (a hand-kept version/checksum?)")
    c.check(len(find(base, "ConfigMap")) == 1, "prefixed base lost its ConfigMap")


def check_runtime_chain(c):
    """RuntimeClass handler == containerd/CRI-O runtime name; runtime_type <-> shim binary; the
    Kata configuration and the drop-ins agree; the build produces the binary."""
    rcs = {}
    for rel in ["runtimeclasses", "runtimeclasses/overlays/snp", "runtimeclasses/overlays/tdx"]:
        for o in c.render(c.path(rel)):
            c.check(o["kind"] == "RuntimeClass", f"{rel}: unexpected {o['kind']}")
            rcs[o["metadata"]["name"]] = o
    c.check({n: o.get("handler") for n, o in rcs.items()} == RUNTIMECLASSES,
            f"RuntimeClass -> handler map is {({n: o.get('handler') for n, o in rcs.items()})}, want {RUNTIMECLASSES}")
    c.check(rcs.get(RUNTIMECLASS, {}).get("handler") == HANDLER, f"{RUNTIMECLASS} handler is not {HANDLER}")
    handlers = set(RUNTIMECLASSES.values())
    kata = c.load_toml("runtimeclasses/kata/config.d/50-vfio-gpu.toml")
    default_memory = dig(kata, "hypervisor", "qemu", "default_memory") or 0
    for name, o in rcs.items():
        sel = dig(o, "scheduling", "nodeSelector") or {}
        c.check(sel.get(NODE_LABEL[0]) == NODE_LABEL[1], f"RuntimeClass {name}: no {NODE_LABEL[0]} nodeSelector")
        mem = dig(o, "overhead", "podFixed", "memory") or ""
        m = re.fullmatch(r"(\d+)(Mi|Gi)", mem)
        mib = int(m.group(1)) * (1024 if m.group(2) == "Gi" else 1) if m else 0
        c.check(mib >= default_memory > 0,
                f"RuntimeClass {name}: overhead memory {mem!r} is below Kata's pinned default_memory {default_memory} MiB")
        c.check(bool(dig(o, "overhead", "podFixed", "cpu")), f"RuntimeClass {name}: no overhead cpu")

    plugin_cfg = c.load_json("deploy/base/plugin-config.json")
    for rel, version, cri in [("runtimeclasses/containerd/v2/50-vfio-gpu.toml", 2, CONTAINERD_V2_CRI),
                              ("runtimeclasses/containerd/v3/50-vfio-gpu.toml", 3, CONTAINERD_V3_CRI)]:
        d = c.load_toml(rel)
        c.check(d.get("version") == version, f"{rel}: version is {d.get('version')}, want {version}")
        c.check(set(dig(d, "plugins") or {}) == {cri}, f"{rel}: plugin sections {sorted(dig(d, 'plugins') or {})}, want only {cri!r}")
        cri_cfg = dig(d, "plugins", cri) or {}
        c.check(cri_cfg.get("enable_cdi") is True, f"{rel}: enable_cdi is not true")
        c.check(plugin_cfg["cdi_dir"] in cri_cfg.get("cdi_spec_dirs", []),
                f"{rel}: cdi_spec_dirs lacks the plugin's cdi_dir {plugin_cfg['cdi_dir']}")
        runtimes = dig(cri_cfg, "containerd", "runtimes") or {}
        c.check(set(runtimes) == handlers, f"{rel}: runtimes {sorted(runtimes)}, want the handlers {sorted(handlers)}")
        for rname, r in runtimes.items():
            where = f"{rel} runtime {rname}"
            c.check(r.get("runtime_type") == RUNTIME_TYPE, f"{where}: runtime_type {r.get('runtime_type')!r}")
            c.check(containerd_binary(r.get("runtime_type", "")) == SHIM_BINARY,
                    f"{where}: runtime_type {r.get('runtime_type')!r} makes containerd start "
                    f"{containerd_binary(r.get('runtime_type', ''))!r}, not {SHIM_BINARY}")
            c.check(dig(r, "options", "ConfigPath") == CONFIG_PATHS.get(rname),
                    f"{where}: ConfigPath {dig(r, 'options', 'ConfigPath')!r}, want {CONFIG_PATHS.get(rname)!r}")
            c.check(r.get("privileged_without_host_devices") is True, f"{where}: privileged_without_host_devices not true")
            for key in ("pod_annotations", "container_annotations"):
                globs = set(r.get(key, []))
                c.check(globs == ALLOWED_ANNOTATION_GLOBS,
                        f"{where}: {key} {sorted(globs)}, want exactly {sorted(ALLOWED_ANNOTATION_GLOBS)}")
            c.check("runtime_path" not in r, f"{where}: runtime_path overrides the binary runtime_type names")

    crio = dig(c.load_toml("runtimeclasses/crio/50-vfio-gpu.conf"), "crio", "runtime") or {}
    c.check(plugin_cfg["cdi_dir"] in crio.get("cdi_spec_dirs", []), "CRI-O drop-in: cdi_spec_dirs lacks the plugin's cdi_dir")
    c.check(set(crio.get("runtimes", {})) == handlers, f"CRI-O drop-in: runtimes {sorted(crio.get('runtimes', {}))}")
    for rname, r in crio.get("runtimes", {}).items():
        c.check(r.get("runtime_type") == "vm", f"CRI-O {rname}: runtime_type is not vm")
        c.check(os.path.basename(r.get("runtime_path", "")) == SHIM_BINARY, f"CRI-O {rname}: runtime_path is not {SHIM_BINARY}")
        c.check(r.get("runtime_config_path") == CONFIG_PATHS.get(rname), f"CRI-O {rname}: runtime_config_path")
        c.check(r.get("privileged_without_host_devices") is True, f"CRI-O {rname}: privileged_without_host_devices")

    q = dig(kata, "hypervisor", "qemu") or {}
    c.check(set(dig(kata, "hypervisor") or {}) == {"qemu"}, "Kata drop-in: must only touch [hypervisor.qemu]")
    c.check(q.get("cold_plug_vfio") == "root-port", "Kata drop-in: cold_plug_vfio is not root-port")
    c.check(q.get("hot_plug_vfio", "no-port") == "no-port", "Kata drop-in: hot_plug_vfio must be no-port with cold plug")
    c.check(isinstance(q.get("pcie_root_port"), int) and q["pcie_root_port"] >= 8,
            "Kata drop-in: pcie_root_port must be an integer >= 8")
    c.check(isinstance(q.get("enable_annotations"), list), "Kata drop-in: enable_annotations missing")
    c.check(isinstance(q.get("default_memory"), int), "Kata drop-in: default_memory missing")
    c.check(dig(kata, "runtime", "pod_resource_api_sock") == POD_RESOURCES_SOCK,
            f"Kata drop-in: pod_resource_api_sock is not {POD_RESOURCES_SOCK}")

    shim = c.load_json("runtimeclasses/shim/shim.json")
    c.check(set(shim) <= SHIM_KEYS, f"shim.json: keys {sorted(set(shim) - SHIM_KEYS)} are not the shim's")
    c.check(shim.get("run_dir") == plugin_cfg["run_dir"], "shim.json run_dir differs from the plugin's run_dir")
    c.check(shim.get("pod_resources_socket") == POD_RESOURCES_SOCK, "shim.json pod_resources_socket")
    c.check({plugin_cfg["resource_name"], plugin_cfg["nvswitch_resource_name"]} <= set(shim.get("resources", [])),
            "shim.json resources do not cover the plugin's resource names")
    c.check(shim.get("authorize") in ("enforce", "warn", "off"), "shim.json authorize")

    # The names must agree with the code that builds the binary.
    cml = c.path("shim-hooks/CMakeLists.txt")
    if os.path.exists(cml):
        c.check(SHIM_BINARY in open(cml).read(), f"shim-hooks/CMakeLists.txt does not build {SHIM_BINARY}")
    else:
        print(f"SKIP: shim-hooks/CMakeLists.txt does not exist yet; not checking that it builds {SHIM_BINARY}")
    # The installer (cli/install_paths.h) writes the Kata copies and the shim where these files
    # point.
    paths_h = c.path("cli/install_paths.h")
    if os.path.exists(paths_h):
        text = open(paths_h).read()
        for want in (KATA_PRIVATE_DIR, f"/usr/local/bin/{SHIM_BINARY}", RUNTIME_TYPE):
            c.check(f'"{want}"' in text, f"cli/install_paths.h does not name {want}")
    cf = open(c.path("deploy/Containerfile")).read()
    for binary in ("vfio-gpu", "vfio-gpu-plugin", SHIM_BINARY, "vfio-gpu-webhook"):
        c.check(re.search(rf"(?<![\w-]){re.escape(binary)}(?![\w-])", cf) is not None,
                f"deploy/Containerfile does not build/ship {binary}")
    c.check(len(re.findall(r"^FROM\s+\S*debian:12", cf, re.M)) >= 2, "deploy/Containerfile is not multi-stage on debian:12")
    # One build stage for both images: the node image (the default target, so last) and the
    # webhook's take their binaries from it; no second Containerfile repeats it.
    stages = re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", cf, re.M)
    c.check(stages[-1:] == ["vfio-gpu"], f"deploy/Containerfile: the last stage (the default target) must be vfio-gpu, got {stages}")
    c.check("vfio-gpu-webhook" in stages, "deploy/Containerfile has no vfio-gpu-webhook target")
    c.check(len(re.findall(r"^FROM\s+\S*debian:12\s+AS\s+build\s*$", cf, re.M)) == 1,
            "deploy/Containerfile must have exactly one build stage")
    c.check(len(re.findall(r"^COPY\s+--from=build\s", cf, re.M)) >= 2,
            "deploy/Containerfile: both images must copy from the shared build stage")
    c.check(not os.path.exists(c.path("deploy/webhook/Containerfile")),
            "deploy/webhook/Containerfile duplicates the build stage of deploy/Containerfile")
    # Every source directory the shipped binaries need is copied into the build stage.
    for part in ("common", "hostmodel", "cdi", "qmp", "proto", "plugin", "shim-hooks", "cli",
                 "webhook", "runtimeclasses", "test/fakes"):
        if os.path.isdir(c.path(part)):
            c.check(re.search(rf"^COPY\s+{re.escape(part)}/\s", cf, re.M) is not None,
                    f"deploy/Containerfile does not copy {part}/ into the build stage")


def check_toml(c):
    """Every TOML drop-in parses (tomllib, TOML 1.0)."""
    found = 0
    for root, _, files in os.walk(c.path("runtimeclasses")):
        for name in files:
            if name.endswith((".toml", ".conf")):
                found += 1
                rel = os.path.relpath(os.path.join(root, name), c.repo)
                try:
                    c.load_toml(rel)
                    c.check(True, rel)
                except tomllib.TOMLDecodeError as e:
                    c.check(False, f"{rel}: not valid TOML: {e}")
    c.check(found >= 4, f"only {found} TOML drop-ins found under runtimeclasses/")
    for rel in ["runtimeclasses/shim/shim.json", "deploy/base/plugin-config.json",
                "deploy/overlays/per-model/plugin-config.json"]:
        try:
            c.load_json(rel)
        except (OSError, json.JSONDecodeError) as e:
            c.check(False, f"{rel}: not valid JSON: {e}")


def check_example(c):
    """The tenant pod needs the RuntimeClass and a GPU limit, and nothing else GPU-related."""
    rel = "deploy/examples/tenant-pod.yaml"
    objs = c.to_objects(open(c.path(rel)).read())
    if not c.check(len(objs) == 1 and objs[0]["kind"] == "Pod", f"{rel}: want one Pod"):
        return
    pod, plugin_cfg = objs[0], c.load_json("deploy/base/plugin-config.json")
    spec = pod["spec"]
    c.check(spec.get("runtimeClassName") == RUNTIMECLASS, f"{rel}: runtimeClassName is not {RUNTIMECLASS}")
    c.check(not pod["metadata"].get("annotations"), f"{rel}: has annotations (no CDI/Kata annotation is needed)")
    for key in ("nodeSelector", "affinity", "tolerations", "volumes", "hostNetwork", "securityContext"):
        c.check(key not in spec, f"{rel}: sets {key}; the RuntimeClass and the plugin take care of GPU placement")
    for ct in spec["containers"]:
        c.check(ct.get("resources", {}).get("limits") == {plugin_cfg["resource_name"]: 1},
                f"{rel}: container {ct['name']} limits {ct.get('resources', {}).get('limits')}, "
                f"want exactly {{{plugin_cfg['resource_name']}: 1}}")
        c.check("requests" not in ct.get("resources", {}), f"{rel}: container {ct['name']} sets requests")
        c.check(not ct.get("env") and not ct.get("volumeMounts") and not ct.get("securityContext"),
                f"{rel}: container {ct['name']} sets env/mounts/securityContext")


def check_containerd_load(c):
    """A real containerd (when installed) loads the drop-in and shows the runtimes."""
    # `config dump` only decodes the TOML. Whether the CRI plugin accepts the result (on 1.x the
    # default runtime, runc, must be named beside ours) shows only in a running containerd:
    # e2e/containerd's containerd_dropin_e2e starts one on the config.toml `vfio-gpu install` wrote.
    binary = shutil.which("containerd")
    if not binary:
        print("SKIP: containerd is not installed; not loading the drop-in into a real containerd")
        return
    ver = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"\s v?(\d+)\.(\d+)", ver)
    major = int(m.group(1)) if m else 1
    rel = "runtimeclasses/containerd/" + ("v3" if major >= 2 else "v2") + "/50-vfio-gpu.toml"
    cri = CONTAINERD_V3_CRI if major >= 2 else CONTAINERD_V2_CRI
    with tempfile.TemporaryDirectory(prefix="vfio-gpu-containerd-") as tmp:
        drop = os.path.join(tmp, "50-vfio-gpu.toml")
        shutil.copy(c.path(rel), drop)
        main = os.path.join(tmp, "config.toml")
        with open(main, "w") as f:
            f.write(f"version = {3 if major >= 2 else 2}\nimports = [{json.dumps(drop)}]\n")
        proc = subprocess.run([binary, "--config", main, "config", "dump"], capture_output=True, text=True, timeout=60)
    if not c.check(proc.returncode == 0, f"containerd {ver.strip()} refuses {rel}: {proc.stderr.strip()}"):
        return
    dump = tomllib.loads(proc.stdout)
    runtimes = dig(dump, "plugins", cri, "containerd", "runtimes") or {}
    for rname in RUNTIMECLASSES.values():
        r = runtimes.get(rname, {})
        c.check(r.get("runtime_type") == RUNTIME_TYPE and dig(r, "options", "ConfigPath") == CONFIG_PATHS[rname],
                f"containerd {ver.strip()} loaded {rel} but runtime {rname} is {r}")
    print(f"containerd {' '.join(ver.split()[1:3])} loads {rel}")


GROUPS = {
    "render": check_render,
    "names": check_names,
    "daemonset": check_daemonset,
    "rollout": check_rollout,
    "runtime-chain": check_runtime_chain,
    "toml": check_toml,
    "example": check_example,
    "containerd-load": check_containerd_load,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", required=True, help="the vfio-gpu source tree")
    ap.add_argument("--group", action="append", choices=sorted(GROUPS), help="run only these groups")
    ap.add_argument("--kubectl", default=os.environ.get("KUBECTL", "kubectl"))
    args = ap.parse_args()

    kubectl = shutil.which(args.kubectl)
    groups = args.group or sorted(GROUPS)
    needs_kubectl = any(g not in ("toml", "containerd-load") for g in groups)
    if needs_kubectl and not kubectl:
        print(f"FAIL: kubectl ({args.kubectl}) not found: the manifests cannot be rendered with "
              "`kubectl kustomize`. Install Debian's kubernetes-client (scripts/install-deps.sh) or "
              "set KUBECTL to a kubectl binary.")
        return 1
    c = Checker(os.path.abspath(args.repo), kubectl)
    for g in groups:
        try:
            GROUPS[g](c)
        except (RuntimeError, OSError, KeyError, IndexError, ValueError, subprocess.TimeoutExpired) as e:
            c.check(False, f"group {g}: {type(e).__name__}: {e}")
    print(f"{c.passes} checks passed, {len(c.failures)} failed ({', '.join(groups)})")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
