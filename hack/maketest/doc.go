// Package maketest tests the Makefile's test and deploy commands and the scripts they run:
// make test installs no package (the tiers that need make test-deps only check for it),
// hack/test-tiers.sh times the tiers without changing make's exit status, and hack/deploy-wait.sh
// waits for the operator that make deploy installed.
package maketest
