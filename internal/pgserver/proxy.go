package pgserver

import (
	"net"
	"sync"
)

// Proxy is a TCP proxy for fault injection between clients and a server.
// Normally it forwards; Blackhole holds every byte in both directions (the
// connections stay open and silent, as in a network partition, and the held
// bytes flow on after Restore); Cut closes every connection and refuses new
// ones until Restore.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cond    *sync.Cond
	mode    proxyMode
	conns   map[net.Conn]struct{}
	closed  bool
	copiers sync.WaitGroup
}

type proxyMode int

const (
	forwarding proxyMode = iota
	blackholed
	cut
)

// NewProxy listens on a free port of 127.0.0.1 and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.copiers.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Blackhole holds all traffic until Restore.
func (p *Proxy) Blackhole() { p.setMode(blackholed) }

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.setMode(cut)
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Restore forwards traffic again.
func (p *Proxy) Restore() { p.setMode(forwarding) }

func (p *Proxy) setMode(m proxyMode) {
	p.mu.Lock()
	p.mode = m
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Close stops the proxy, closes every connection and waits for its
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.cond.Broadcast()
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
		refuse := p.mode == cut || p.closed
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

// pipe copies from src to dst, holding each chunk while blackholed.
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
			if !p.waitForwarding() {
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

// waitForwarding blocks while the proxy is blackholed; it reports false if
// the connection must be dropped instead.
func (p *Proxy) waitForwarding() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.mode == blackholed && !p.closed {
		p.cond.Wait()
	}
	return p.mode == forwarding && !p.closed
}
