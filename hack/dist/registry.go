package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// runRegistry serves an OCI distribution registry, held in memory, on a
// loopback address; it prints the address it listens on (host:port) as its
// first line of output and serves until its standard input closes, so that
// it never outlives the process that started it.
func runRegistry(args []string) error {
	fset := flag.NewFlagSet("registry", flag.ContinueOnError)
	addr := fset.String("addr", "127.0.0.1:0", "the address to listen on (loopback only)")
	verbose := fset.Bool("v", false, "log every request on standard error")
	if err := fset.Parse(args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("registry: %s is not a loopback address", *addr)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	logger := log.New(io.Discard, "", 0)
	if *verbose {
		logger = log.New(os.Stderr, "registry: ", log.LstdFlags)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(logger)), ReadHeaderTimeout: 30 * time.Second}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
