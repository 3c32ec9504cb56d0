#!/usr/bin/env bash
# make deploy's last step: waits until the operator it installed serves, so that the next command
# (kubectl apply -k config/samples) is admitted. First its Deployment rolls out and is available;
# then the apiserver must reach its validating webhook, which it cannot before the operator has
# written the webhook's certificate and CA: a server-side dry run of a sample profile is retried
# until the webhook answers. Both share one timeout, after which it fails saying what it waited for.
#
# Usage: hack/deploy-wait.sh NAMESPACE DEPLOYMENT PROFILE TIMEOUT_SECONDS
# DEPLOY_POLL_SECONDS sets the pause between dry runs (2).
set -euo pipefail

if (($# != 4)); then
	echo "usage: $0 NAMESPACE DEPLOYMENT PROFILE TIMEOUT_SECONDS" >&2
	exit 2
fi
namespace=$1 deployment=$2 profile=$3 timeout=$4
poll=${DEPLOY_POLL_SECONDS:-2}
deadline=$((SECONDS + timeout))

if ! kubectl -n "$namespace" rollout status "deployment/$deployment" --timeout="${timeout}s"; then
	echo "make deploy: the operator's Deployment $namespace/$deployment is not available after ${timeout}s;" \
		"kubectl -n $namespace describe deployment/$deployment and kubectl -n $namespace logs deployment/$deployment say why" >&2
	exit 1
fi

# A generated name, so that a profile of the sample's name that exists already does not matter.
manifest=$(sed -E '/^metadata:/,/^[^ ]/ s/^  name: .*/  generateName: make-deploy-check-/' "$profile")
while true; do
	if out=$(kubectl create --dry-run=server -o name -f - <<<"$manifest" 2>&1); then
		echo "make deploy: the operator's webhook answers"
		exit 0
	fi
	if [[ $out == *"denied the request"* ]]; then
		echo "make deploy: the operator's webhook refused the sample $profile: $out" >&2
		exit 1
	fi
	if ((SECONDS >= deadline)); then
		echo "make deploy: the operator's webhook does not answer after ${timeout}s (a server-side dry run of $profile): $out" >&2
		echo "kubectl -n $namespace logs deployment/$deployment says why" >&2
		exit 1
	fi
	sleep "$poll"
done
