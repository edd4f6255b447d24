package events

import "sync"

// Broker wakes subscribers after a commit. It carries no events: a woken
// subscriber re-reads the log from its own cursor, so a missed or merged
// wake-up can delay delivery but never lose, duplicate or reorder an event.
type Broker struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// NewBroker returns an empty broker.
func NewBroker() *Broker { return &Broker{subs: make(map[chan struct{}]struct{})} }

// Notify wakes every subscriber without blocking: each subscriber's channel
// holds at most one pending wake-up, which is all it needs.
func (b *Broker) Notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Subscribe returns a channel that receives a value after commits, and a
// function that unsubscribes.
func (b *Broker) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs, ch)
		b.mu.Unlock()
	}
}

// Subscribers reports how many subscribers are connected.
func (b *Broker) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}
