// Package freeport finds free TCP ports on 127.0.0.1 for the servers that tests, the local
// cluster and the benchmarks start. It imports nothing of the project, so that any of them may
// use it.
package freeport

import (
	"fmt"
	"net"
)

// Ports returns n TCP ports on 127.0.0.1 that the kernel chose free. All listeners stay open
// until every port is chosen, so no port is returned twice; another process could still take one
// before its user binds it.
func Ports(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer func() { _ = l.Close() }()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
