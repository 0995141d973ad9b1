"""The match analyses: the consumer that analyses every finished match, the statistics over
the stored analyses, and their public and operator routes."""
