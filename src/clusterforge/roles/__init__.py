"""pyinfra deploys (roles) a deploy file calls for each group of hosts."""
