package chat

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Price is USD per million tokens, in and out.
type Price struct {
	In  float64 `json:"input"`
	Out float64 `json:"output"`
}

// Cost is the USD cost of u.
func (p Price) Cost(u Usage) float64 {
	return (float64(u.In)*p.In + float64(u.Out)*p.Out) / 1e6
}

// Prices maps a model name (or a prefix of dated model ids, e.g.
// claude-sonnet-4-5 for claude-sonnet-4-5-20250929) to its price.
type Prices map[string]Price

// DefaultPrices are list prices in USD per million tokens as published by
// OpenAI and Anthropic; they change — override them with LLM_PRICES.
func DefaultPrices() Prices {
	return Prices{
		"gpt-5":             {1.25, 10},
		"gpt-5-mini":        {0.25, 2},
		"gpt-5-nano":        {0.05, 0.40},
		"gpt-4.1":           {2, 8},
		"gpt-4.1-mini":      {0.40, 1.60},
		"gpt-4.1-nano":      {0.10, 0.40},
		"gpt-4o":            {2.50, 10},
		"gpt-4o-mini":       {0.15, 0.60},
		"o3":                {2, 8},
		"o4-mini":           {1.10, 4.40},
		"claude-opus-4-5":   {5, 25},
		"claude-opus-4-1":   {15, 75},
		"claude-opus-4":     {15, 75},
		"claude-sonnet-4-5": {3, 15},
		"claude-sonnet-4":   {3, 15},
		"claude-haiku-4-5":  {1, 5},
		"claude-3-7-sonnet": {3, 15},
		"claude-3-5-haiku":  {0.80, 4},
	}
}

// LoadPrices merges LLM_PRICES over the defaults: inline JSON (it starts with
// "{") or the path of a JSON file, {"model": {"input": 0.4, "output": 1.6}}.
func LoadPrices(spec string) (Prices, error) {
	p := DefaultPrices()
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return p, nil
	}
	b := []byte(spec)
	if !strings.HasPrefix(spec, "{") {
		var err error
		if b, err = os.ReadFile(spec); err != nil {
			return nil, &ConfigError{"LLM_PRICES", err.Error(), "a JSON file or inline JSON, {\"model\":{\"input\":0.4,\"output\":1.6}} in USD per million tokens"}
		}
	}
	var extra map[string]Price
	if err := json.Unmarshal(b, &extra); err != nil {
		return nil, &ConfigError{"LLM_PRICES", "not a JSON object of prices: " + err.Error(), "{\"model\":{\"input\":0.4,\"output\":1.6}} in USD per million tokens"}
	}
	for m, pr := range extra {
		if pr.In < 0 || pr.Out < 0 {
			return nil, &ConfigError{"LLM_PRICES", fmt.Sprintf("negative price for %q", m), "prices are USD per million tokens"}
		}
		p[m] = pr
	}
	return p, nil
}

// Lookup finds a model's price: exactly, else by the longest listed prefix
// followed by "-" (dated ids). A model on an OpenAI-compatible (local)
// server not in the table costs nothing.
func (p Prices) Lookup(kind, model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	best := ""
	for m := range p {
		if strings.HasPrefix(model, m+"-") && len(m) > len(best) {
			best = m
		}
	}
	if best != "" {
		return p[best], true
	}
	if kind == KindOpenAICompatible {
		return Price{}, true
	}
	return Price{}, false
}
