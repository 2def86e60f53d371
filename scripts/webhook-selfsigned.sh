#!/usr/bin/env bash
# webhook-selfsigned.sh: serving certificate for vfio-gpu-webhook on clusters without cert-manager.
#
# Makes a private CA and a server certificate for the webhook's Service with openssl, puts the pair
# into the Secret the Deployment mounts, and fills the caBundle of the MutatingWebhookConfiguration
# so the API server trusts it. Re-run it to rotate: the webhook re-reads the Secret's files when the
# kubelet updates them (no restart), and the new caBundle keeps the previous CA too, so the API
# server trusts both the old and the new certificate while the kubelet catches up.
#
# Usage:
#   kubectl apply -k deploy/webhook/without-cert-manager      # objects; pods wait for the Secret
#   scripts/webhook-selfsigned.sh --apply                     # Secret + caBundle
#
# Options (defaults match deploy/webhook/):
#   --namespace NS     namespace of the webhook             (vfio-gpu-system)
#   --service NAME     its Service                          (vfio-gpu-webhook)
#   --secret NAME      the TLS Secret the Deployment mounts (vfio-gpu-webhook-tls)
#   --webhook NAME     the MutatingWebhookConfiguration     (vfio-gpu-webhook)
#   --days N           validity of CA and certificate       (365)
#   --out DIR          where to write the files            (a new temporary directory)
#   --apply            apply the Secret and patch the caBundle with kubectl; without it, only
#                      write the files: ca.crt, tls.crt, tls.key, secret.yaml, cabundle-patch.json
set -euo pipefail

namespace=vfio-gpu-system
service=vfio-gpu-webhook
secret=vfio-gpu-webhook-tls
webhook=vfio-gpu-webhook
days=365
out=""
apply=false

die() { echo "webhook-selfsigned: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

while (($#)); do
  case "$1" in
    --namespace) namespace=${2:?--namespace needs a value}; shift 2 ;;
    --service) service=${2:?--service needs a value}; shift 2 ;;
    --secret) secret=${2:?--secret needs a value}; shift 2 ;;
    --webhook) webhook=${2:?--webhook needs a value}; shift 2 ;;
    --days) days=${2:?--days needs a value}; shift 2 ;;
    --out) out=${2:?--out needs a value}; shift 2 ;;
    --apply) apply=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

command -v openssl >/dev/null || die "openssl is not installed (Debian: apt-get install openssl)"
if $apply; then
  command -v kubectl >/dev/null || die "--apply needs kubectl on PATH"
fi
[[ $days =~ ^[0-9]+$ ]] || die "--days '$days' is not a number of days"
if [[ -z $out ]]; then
  out=$(mktemp -d "${TMPDIR:-/tmp}/vfio-gpu-webhook-tls.XXXXXX")
else
  mkdir -p "$out"
fi
umask 077

# What the API server dials is <service>.<namespace>.svc; the other names cover in-cluster clients.
dns="DNS:$service.$namespace.svc,DNS:$service.$namespace.svc.cluster.local,DNS:$service.$namespace,DNS:$service"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$days" \
  -subj "/CN=$service.$namespace CA" -keyout "$out/ca.key" -out "$out/ca.crt" 2>/dev/null \
  || die "openssl could not make the CA in $out"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -subj "/CN=$service.$namespace.svc" -keyout "$out/tls.key" -out "$out/tls.csr" 2>/dev/null \
  || die "openssl could not make the key and request in $out"
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n' \
  "$dns" > "$out/tls.ext"
openssl x509 -req -in "$out/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" -CAcreateserial \
  -days "$days" -extfile "$out/tls.ext" -out "$out/tls.crt" 2>/dev/null \
  || die "openssl could not sign the certificate in $out"
openssl verify -CAfile "$out/ca.crt" "$out/tls.crt" >/dev/null || die "the new certificate does not verify"
# The CA key signed this one certificate and is never needed again (a rotation makes a new CA):
# deleting it means nobody can mint more certificates the API server would trust for the webhook.
rm -f "$out/ca.key" "$out/tls.csr" "$out/tls.ext" "$out/ca.srl"

b64() { base64 -w0 < "$1"; }
cat > "$out/secret.yaml" <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: $secret
  namespace: $namespace
type: kubernetes.io/tls
data:
  tls.crt: $(b64 "$out/tls.crt")
  tls.key: $(b64 "$out/tls.key")
  ca.crt: $(b64 "$out/ca.crt")
YAML

# The bundle: the new CA, plus the previous one when the webhook configuration already has one.
cp "$out/ca.crt" "$out/ca-bundle.crt"
if $apply; then
  old=$(kubectl get mutatingwebhookconfiguration "$webhook" \
          -o jsonpath='{.webhooks[0].clientConfig.caBundle}' 2>/dev/null || true)
  if [[ -n $old ]]; then
    # Only the first certificate of the old bundle: rotations never accumulate more than two CAs.
    base64 -d <<<"$old" | awk '/-----BEGIN CERTIFICATE-----/{n++} n==1{print} /-----END CERTIFICATE-----/{if(n==1) exit}' \
      >> "$out/ca-bundle.crt"
  fi
fi
printf '[{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"%s"}]\n' \
  "$(b64 "$out/ca-bundle.crt")" > "$out/cabundle-patch.json"

echo "webhook-selfsigned: wrote $out/{ca.crt,tls.crt,tls.key,secret.yaml,cabundle-patch.json}"
echo "webhook-selfsigned: certificate for ${dns//DNS:/}, valid $days days"
if ! $apply; then
  echo "webhook-selfsigned: to install: kubectl apply -f $out/secret.yaml &&" \
       "kubectl patch mutatingwebhookconfiguration $webhook --type=json --patch-file $out/cabundle-patch.json"
  exit 0
fi

kubectl get namespace "$namespace" >/dev/null 2>&1 || kubectl create namespace "$namespace"
kubectl apply -f "$out/secret.yaml"
if kubectl get mutatingwebhookconfiguration "$webhook" >/dev/null 2>&1; then
  kubectl patch mutatingwebhookconfiguration "$webhook" --type=json --patch-file "$out/cabundle-patch.json"
  echo "webhook-selfsigned: Secret $namespace/$secret and the caBundle of $webhook are set"
else
  echo "webhook-selfsigned: Secret $namespace/$secret is set, but MutatingWebhookConfiguration" \
       "$webhook does not exist yet: apply deploy/webhook/without-cert-manager, then run" \
       "kubectl patch mutatingwebhookconfiguration $webhook --type=json --patch-file $out/cabundle-patch.json"
fi
