#!/usr/bin/env python3
"""Invariants of deploy/webhook/, rendered with `kubectl kustomize` (Python 3 stdlib + kubectl).

Each check prints `FAIL: ...` naming the object and field; ctest fails on that text or a non-zero
exit. Checked for the default (cert-manager), without-cert-manager, and an operator overlay that
adds a 20-character namePrefix and another namespace (the wiring components' reason to exist)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def render(path):
    try:
        out = subprocess.run(["kubectl", "kustomize", path], check=True, capture_output=True,
                             text=True).stdout
    except FileNotFoundError:
        fail("kubectl is not installed; scripts/install-deps.sh installs it")
        sys.exit(1)
    except subprocess.CalledProcessError as e:
        fail(f"kubectl kustomize {path}: {e.stderr.strip()}")
        sys.exit(1)
    # YAML -> JSON by kubectl itself, without a cluster, so PyYAML is not needed.
    conv = subprocess.run(["kubectl", "annotate", "--local", "-f", "-", "-o", "json",
                           "vfio-gpu.io/none-"], input=out, capture_output=True, text=True)
    if conv.returncode != 0:
        fail(f"kubectl annotate --local (YAML to JSON) for {path}: {conv.stderr.strip()}")
        sys.exit(1)
    objs, dec, pos, text = [], json.JSONDecoder(), 0, conv.stdout
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        obj, pos = dec.raw_decode(text, pos)
        objs.extend(obj.get("items", []) if obj.get("kind") == "List" else [obj])
    return objs


def by_kind(objs, kind):
    found = [o for o in objs if o["kind"] == kind]
    if len(found) != 1:
        fail(f"expected one {kind}, found {len(found)}")
        return {}
    return found[0]


def check(objs, variant, ns, prefix, cert_manager):
    for o in objs:
        name = o["metadata"]["name"]
        if len(name) > 40:
            fail(f"{variant}: {o['kind']} {name} is longer than 40 characters")
        if len(name) - len(prefix) > 20:
            fail(f"{variant}: {o['kind']} {name} leaves no room for a 20-character prefix")
    svc = by_kind(objs, "Service")
    dep = by_kind(objs, "Deployment")
    pdb = by_kind(objs, "PodDisruptionBudget")
    mwc = by_kind(objs, "MutatingWebhookConfiguration")
    by_kind(objs, "ConfigMap")
    if dep.get("spec", {}).get("replicas") != 2:
        fail(f"{variant}: Deployment replicas is not 2")
    if pdb.get("spec", {}).get("minAvailable") != 1:
        fail(f"{variant}: PodDisruptionBudget minAvailable is not 1")
    hooks = mwc.get("webhooks", [])
    if len(hooks) != 1:
        fail(f"{variant}: expected one webhook in the configuration")
        return
    h = hooks[0]
    expect = {"failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"]}
    for k, v in expect.items():
        if h.get(k) != v:
            fail(f"{variant}: webhook {k} is {h.get(k)!r}, want {v!r}")
    if not 1 <= h.get("timeoutSeconds", 10) <= 5:
        fail(f"{variant}: timeoutSeconds {h.get('timeoutSeconds')} is not small (1-5)")
    rule = h["rules"][0]
    if rule["operations"] != ["CREATE"] or rule["resources"] != ["pods"]:
        fail(f"{variant}: the webhook must see Pod CREATE, rule is {rule}")
    service = h["clientConfig"]["service"]
    if service["name"] != svc["metadata"]["name"] or service["namespace"] != ns:
        fail(f"{variant}: clientConfig.service {service} does not name Service "
             f"{ns}/{svc['metadata']['name']}")
    if service.get("path") != "/mutate":
        fail(f"{variant}: clientConfig.service.path is not /mutate")
    exempt = h["namespaceSelector"]["matchExpressions"][0]
    if exempt["operator"] != "NotIn" or sorted(exempt["values"]) != sorted(
            ["kube-system", "kube-public", "kube-node-lease", ns]):
        fail(f"{variant}: namespaceSelector exempts {exempt}, want the system namespaces and {ns}")
    for o in objs:
        if o["kind"] not in ("Namespace", "MutatingWebhookConfiguration") and \
                o["metadata"].get("namespace") != ns:
            fail(f"{variant}: {o['kind']} {o['metadata']['name']} is not in namespace {ns}")
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    for flag in ("--listen=", "--tls-cert=", "--tls-key=", "--config="):
        if not any(a.startswith(flag) for a in args):
            fail(f"{variant}: Deployment args lack {flag}")
    secret = next(v["secret"]["secretName"] for v in dep["spec"]["template"]["spec"]["volumes"]
                  if "secret" in v)
    if cert_manager:
        cert = by_kind(objs, "Certificate")
        issuer = by_kind(objs, "Issuer")
        want = f"{svc['metadata']['name']}.{ns}.svc"
        if want not in cert["spec"]["dnsNames"]:
            fail(f"{variant}: Certificate dnsNames {cert['spec']['dnsNames']} lack {want}")
        if cert["spec"]["secretName"] != secret:
            fail(f"{variant}: Certificate writes {cert['spec']['secretName']}, pods mount {secret}")
        if cert["spec"]["issuerRef"]["name"] != issuer["metadata"]["name"]:
            fail(f"{variant}: Certificate names Issuer {cert['spec']['issuerRef']['name']}")
        inject = mwc["metadata"].get("annotations", {}).get("cert-manager.io/inject-ca-from")
        if inject != f"{ns}/{cert['metadata']['name']}":
            fail(f"{variant}: inject-ca-from is {inject!r}, want {ns}/{cert['metadata']['name']}")
    elif any(o["kind"] in ("Certificate", "Issuer") for o in objs):
        fail(f"{variant}: cert-manager objects in the variant without cert-manager")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    args = ap.parse_args()
    deploy = os.path.join(args.repo, "deploy", "webhook")
    check(render(deploy), "default", "vfio-gpu-system", "", True)
    check(render(os.path.join(deploy, "without-cert-manager")), "without-cert-manager",
          "vfio-gpu-system", "", False)
    # kustomize refuses absolute paths between kustomizations: build the overlay beside a copy.
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(deploy, os.path.join(tmp, "webhook"))
        os.makedirs(os.path.join(tmp, "ov", "inner"))
        prefix = "tenant-cluster-0042-"  # 20 characters
        with open(os.path.join(tmp, "ov", "inner", "kustomization.yaml"), "w") as f:
            f.write(f"resources: [../../webhook]\nnamePrefix: {prefix}\nnamespace: gpu-admission\n")
        with open(os.path.join(tmp, "ov", "kustomization.yaml"), "w") as f:
            f.write("resources: [inner]\n"
                    "components: [../webhook/wiring, ../webhook/wiring-cert-manager]\n")
        check(render(os.path.join(tmp, "ov")), "prefixed overlay", "gpu-admission", prefix, True)
    # The shipped config file is what the binary reads; it must be plain JSON with known keys.
    with open(os.path.join(deploy, "base", "config.json")) as f:
        cfg = json.load(f)
    known = {"resources", "gpu_runtime_class", "allowed_runtime_classes", "annotation_policy",
             "kata_annotation_allowlist"}
    if set(cfg) - known:
        fail(f"base/config.json has unknown keys {sorted(set(cfg) - known)}")
    print("deploy/webhook: " + ("FAILED" if failures else "all checks passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
