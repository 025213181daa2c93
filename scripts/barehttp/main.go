// Command barehttp serves a constant answer of a given size with a bare
// net/http handler: the baseline `make bench-http` compares registryd's
// GET /v1/resolve against.
package main

import (
	"bytes"
	"flag"
	"log"
	"net/http"
	"strconv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18081", "listen address")
	size := flag.Int("size", 512, "answer size in bytes")
	flag.Parse()
	body := bytes.Repeat([]byte("x"), *size)
	length := strconv.Itoa(len(body))
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", length)
		w.Write(body)
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
