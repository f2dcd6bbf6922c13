"""Recall: the vector index, the embedding worker and the hybrid ranker that long-term memory (and later
working memory and skills) search with."""
