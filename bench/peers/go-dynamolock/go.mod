module leasehold.dev/bench/dynamolock-candidate

go 1.26.0
