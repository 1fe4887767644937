// Command etcd is upstream etcd's server main, built from the go.etcd.io/etcd/server/v3
// module pinned in go.mod (that module's own replace directives keep `go install` from
// building it directly).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
