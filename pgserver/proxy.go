package pgserver

import (
	"net"
	"sync"
)

// Proxy is a TCP proxy for fault injection between clients and a server:
// the standby of a Pair replicates through one. Normally it forwards; Cut
// closes every connection and refuses new ones until Restore. A Gate, if
// given, may hold the traffic besides (the test harness's blackhole).
type Proxy struct {
	ln     net.Listener
	target string
	gate   Gate

	mu      sync.Mutex
	cut     bool
	conns   map[net.Conn]struct{}
	closed  bool
	copiers sync.WaitGroup
}

// Gate decides whether a Proxy forwards each chunk it reads: Wait blocks
// while the chunk must be held, and reports false if the connection must be
// dropped instead. Whoever holds traffic must release it before the Proxy
// is closed, which waits for every connection's copiers.
type Gate interface {
	Wait() bool
}

// NewProxy listens on a free port of 127.0.0.1 and forwards to target.
func NewProxy(target string) (*Proxy, error) { return NewGatedProxy(target, nil) }

// NewGatedProxy is NewProxy with gate (nil for none) asked before every
// chunk is forwarded.
func NewGatedProxy(target string, gate Gate) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, gate: gate, conns: map[net.Conn]struct{}{}}
	p.copiers.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Restore forwards traffic again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Close stops the proxy, closes every connection and waits for its
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.copiers.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.copiers.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.cut || p.closed
		p.mu.Unlock()
		if refuse {
			client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, server) {
			client.Close()
			server.Close()
			continue
		}
		p.copiers.Add(2)
		go p.pipe(server, client)
		go p.pipe(client, server)
	}
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies from src to dst, asking the gate before each chunk.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.copiers.Done()
	defer func() {
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
		src.Close()
		dst.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if (p.gate != nil && !p.gate.Wait()) || !p.forwarding() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forwarding reports whether the proxy forwards: neither cut nor closed.
func (p *Proxy) forwarding() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.cut && !p.closed
}
