// Command bare is the baseline of serve's benchmark: a bare net/http
// server that answers every request with a constant ID, the HTTP stack's
// own limit on this host. It prints the address it listens on.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	body := []byte("1805834298273538048\n")
	ct := []string{"text/plain; charset=utf-8"}
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Content-Type"] = ct
		_, _ = w.Write(body)
	}))
}
