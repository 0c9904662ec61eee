"""`edgerollout dashboard`: the fleet's rollouts as a web page served by the command itself."""
