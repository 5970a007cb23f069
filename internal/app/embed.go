package app

import (
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/embed"
)

// newEmbedder builds the search tools' embedder from PARSE_MCP_EMBEDDINGS_*
// (nil when none is configured; --demo defaults to the fixture embedder).
func newEmbedder(cfg *config.Config) (embed.Embedder, error) {
	u := cfg.EmbeddingsURL
	if u == "" && cfg.Demo {
		u = embed.FixtureName
	}
	switch u {
	case "":
		return nil, nil
	case embed.FixtureName:
		return embed.Fixture{}, nil
	}
	budget := cfg.EmbeddingsBudget
	return embed.NewClient(embed.ClientConfig{URL: u, Model: cfg.EmbeddingsModel, APIKey: cfg.EmbeddingsAPIKey.Reveal(),
		Dimensions: cfg.EmbeddingsDimensions, Budget: budget})
}
