"""The MLPerf rules: logging, rulesets and targets, the closed/open division, the results tree."""
