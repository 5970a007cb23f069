package chat

import "testing"

// TestPriceLookup: a price is found by the exact model name or by the family
// of a dated snapshot, and is unknown otherwise: a newer model is never
// priced as an older one whose name is its prefix.
func TestPriceLookup(t *testing.T) {
	p := DefaultPrices()
	cases := []struct {
		name, kind, model string
		want              Price
		ok                bool
	}{
		{"exact", KindAnthropic, "claude-opus-4-6", Price{5, 25}, true},
		{"exact, older generation", KindAnthropic, "claude-opus-4", Price{15, 75}, true},
		{"exact openai", KindOpenAI, "gpt-5.4-mini", Price{0.75, 4.50}, true},
		{"anthropic snapshot of a family", KindAnthropic, "claude-sonnet-4-6-20260217", Price{3, 15}, true},
		{"anthropic snapshot of an older family", KindAnthropic, "claude-opus-4-20250514", Price{15, 75}, true},
		{"openai snapshot of a family", KindOpenAI, "gpt-5.4-mini-2026-03-17", Price{0.75, 4.50}, true},
		{"a newer model is not its prefix's family", KindAnthropic, "claude-opus-4-9", Price{}, false},
		{"a variant is not its base's family", KindOpenAI, "gpt-5.4-mini-search-preview", Price{}, false},
		{"not a date", KindOpenAI, "gpt-5.4-2026-13-45", Price{}, false},
		{"unknown", KindOpenAI, "gpt-99", Price{}, false},
		{"local server, unlisted", KindOpenAICompatible, "qwen2.5-7b-instruct", Price{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := p.Lookup(tc.kind, tc.model)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Lookup(%s, %s) = %v %v, want %v %v", tc.kind, tc.model, got, ok, tc.want, tc.ok)
			}
		})
	}
}
