#!/usr/bin/env escript
%% Validates a rabbitmq.conf against the cuttlefish schemas of an installed RabbitMQ, offline, the way
%% the node does at boot (unknown keys, bad values, missing files): no running node needed.
%% usage: escript validate-rabbitmq-conf.escript <RabbitMQ plugins dir> <rabbitmq.conf>
%% Used by infra/tools/test/rabbitmq-conf.test.ts.
main([Plugins, Conf]) ->
    [code:add_patha(E) || E <- filelib:wildcard(Plugins ++ "/*/ebin")],
    Schemas = filelib:wildcard(Plugins ++ "/*/priv/schema/*.schema"),
    Schema = cuttlefish_schema:files(Schemas),
    case cuttlefish_conf:files([Conf]) of
        {errorlist, Errs} -> io:format("conf errors: ~p~n", [Errs]), halt(1);
        ConfTerms ->
            case cuttlefish_generator:map(Schema, ConfTerms) of
                {error, Phase, {errorlist, Errs}} -> io:format("~p: ~p~n", [Phase, Errs]), halt(1);
                Mapped -> io:format("ok ~p~n", [length(Mapped)]), halt(0)
            end
    end.
